// The opt-in explanation of a v2 answer (explain-schema.ts), built from what the native pipeline
// already reports: its candidate, the verifier's reading and the pack's cutoffs. Each candidate's
// outcome follows from the detection state the pipeline decided; nothing is decided twice.
import type { Model } from '../packs/model';
import type { Analysis } from '../pipeline/analysis';
import type { PredictExplanation } from './explain-schema';

type Outcome = PredictExplanation['candidates'][number]['outcome'];

function outcomeOf(analysis: Analysis): Outcome {
  if (analysis.detection === 'detected') return 'chosen';
  if (analysis.detection === 'not_detected') return 'below_low_confidence_cutoff';
  return analysis.evidence.verification?.passed === false ? 'vetoed_lookalike' : 'below_detected_cutoff';
}

export function explain(model: Model, analysis: Analysis): PredictExplanation {
  const { candidate, verification } = analysis.evidence;
  const { cutoffs, verifier } = model.manifest;
  return {
    candidates: candidate
      ? [
          {
            bounding_box: { x_min: candidate.box[0], y_min: candidate.box[1], x_max: candidate.box[2], y_max: candidate.box[3] },
            detection_confidence: candidate.confidence,
            raw_score: candidate.rawScore,
            outcome: outcomeOf(analysis),
            verifier: verification
              ? { lookalike_mass: verification.lookalikeMass, cat_mass: verification.catMass, dog_mass: verification.dogMass, passed: verification.passed }
              : null,
          },
        ]
      : [],
    cutoffs: { detected: cutoffs.detected, low_confidence: cutoffs.lowConfidence },
    verifier: verifier
      ? { checked: verification?.checked ?? 0, max_candidates: verifier.maxCandidates, max_lookalike_mass: verifier.rule.maxLookalikeMass }
      : null,
  };
}
