// The opt-in explanation of a v2 answer (explain-schema.ts), built from what the native pipeline
// reports for an item submitted with `explain`: every candidate the detector proposed, with the
// verifier's reading and the outcome the pipeline decided for each, and the pack's cutoffs.
// Nothing is decided twice.
import type { Model } from '../packs/model';
import type { Analysis } from '../pipeline/analysis';
import type { PredictExplanation } from './explain-schema';

export function explain(model: Model, analysis: Analysis): PredictExplanation {
  const { verification } = analysis.evidence;
  const { cutoffs, verifier } = model.manifest;
  return {
    candidates: analysis.evidence.proposals.map((p) => ({
      bounding_box: { x_min: p.box[0], y_min: p.box[1], x_max: p.box[2], y_max: p.box[3] },
      detection_confidence: p.confidence,
      raw_score: p.rawScore,
      outcome: p.outcome,
      verifier: p.verification
        ? { lookalike_mass: p.verification.lookalikeMass, cat_mass: p.verification.catMass, dog_mass: p.verification.dogMass, passed: p.verification.passed }
        : null,
    })),
    cutoffs: { detected: cutoffs.detected, low_confidence: cutoffs.lowConfidence },
    verifier: verifier
      ? { checked: verification?.checked ?? 0, max_candidates: verifier.maxCandidates, max_lookalike_mass: verifier.rule.maxLookalikeMass }
      : null,
  };
}
