// The v2 opt-in explanation (`explain=true` on the predict operations): what the pipeline saw
// beyond its answer. A separate schema, so PredictResponse and default answers stay as they are.
import { Type, type Static } from '@sinclair/typebox';
import { BoundingBox } from './schemas';

const Mass = (what: string) => Type.Number({ minimum: 0, maximum: 1, description: `Softmax probability of the crop summed over the verifier's ${what}` });

const VerifierReading = Type.Object(
  {
    lookalike_mass: Mass('look-alike classes'),
    cat_mass: Mass('cat classes'),
    dog_mass: Mass('dog classes'),
    passed: Type.Boolean({ description: 'false: vetoed, `lookalike_mass` is above the rule\'s `max_lookalike_mass`' }),
  },
  { description: "The verifier's reading of this candidate's crop (GET /v2/models names its classes); null without a verifier, or when the candidate was not checked" },
);

export const CandidateOutcome = Type.Union(
  [Type.Literal('chosen'), Type.Literal('below_detected_cutoff'), Type.Literal('below_low_confidence_cutoff'), Type.Literal('vetoed_lookalike'), Type.Literal('another_chosen')],
  {
    description:
      '`chosen`: the answer\'s cat, classified; `below_detected_cutoff`: under the detected cutoff (the answer\'s `low_confidence` candidate when it is the best); `below_low_confidence_cutoff`: too weak to report; `vetoed_lookalike`: the verifier saw a look-alike; `another_chosen`: it passed the verifier, but an earlier one, or one looking more like a cat than a dog, was chosen',
  },
);

const ExplainedCandidate = Type.Object({
  bounding_box: BoundingBox,
  detection_confidence: Type.Number({ minimum: 0, maximum: 1, description: 'Calibrated detector confidence, compared with `cutoffs`' }),
  raw_score: Type.Number({ description: "Uncalibrated detector score (the format's cat probability, combined over the detector's views)" }),
  outcome: CandidateOutcome,
  verifier: Type.Union([VerifierReading, Type.Null()]),
});

export const PredictExplanation = Type.Object(
  {
    candidates: Type.Array(ExplainedCandidate, {
      description:
        "Every candidate the detector proposed (the best view's boxes after NMS, at most the verifier's `max_candidates`), best first, with what became of each; empty when the detector scored nothing above its floor",
    }),
    cutoffs: Type.Object(
      {
        detected: Type.Number({ description: '`detected` at or above this confidence (classified)' }),
        low_confidence: Type.Number({ description: '`low_confidence` at or above this, `not_detected` below' }),
      },
      { description: "The pack's detection cutoffs" },
    ),
    verifier: Type.Union(
      [
        Type.Object({
          checked: Type.Integer({ description: 'Candidates above the detected cutoff that the verifier read, best first; 0 when none reached it' }),
          max_candidates: Type.Integer({ description: 'At most this many are read per photo' }),
          max_lookalike_mass: Type.Number({ description: 'A candidate whose `lookalike_mass` is above this is vetoed' }),
        }),
        Type.Null(),
      ],
      { description: 'The pack\'s verifier; null when it has none' },
    ),
  },
  { $id: 'PredictExplanation', description: 'With `explain=true` only: why the answer is what it is' },
);
export type PredictExplanation = Static<typeof PredictExplanation>;
