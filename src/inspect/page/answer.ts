// The shapes the page reads: a v2 predict answer with `explanation` (explain=true), the model list,
// and the service's error body. Only the fields the page uses.

export interface Box {
  x_min: number;
  y_min: number;
  x_max: number;
  y_max: number;
}

export interface Reading {
  lookalike_mass: number;
  cat_mass: number;
  dog_mass: number;
  passed: boolean;
}

export type Outcome = 'chosen' | 'below_detected_cutoff' | 'below_low_confidence_cutoff' | 'vetoed_lookalike' | 'another_chosen';

export interface Candidate {
  bounding_box: Box;
  detection_confidence: number;
  raw_score: number;
  outcome: Outcome;
  verifier: Reading | null;
}

export interface Answer {
  request_id: string;
  model: { id: string; version: string; pack_version: string };
  detection: 'detected' | 'low_confidence' | 'not_detected';
  prediction: { label: 'comfort' | 'discomfort'; score: number; threshold: number } | null;
  cat: { bounding_box: Box; detection_confidence: number } | null;
  image: { width: number; height: number };
  explanation: {
    candidates: Candidate[];
    cutoffs: { detected: number; low_confidence: number };
    verifier: { checked: number; max_candidates: number; max_lookalike_mass: number } | null;
  };
}

export interface ModelVersion {
  pack_version: string;
  role: 'serving' | 'standby' | 'shadow' | 'canary' | 'previous';
  share: number;
}

export interface ModelList {
  models: Array<{ id: string; pack_version: string; default_threshold: number; versions: ModelVersion[]; classifier: { trained: boolean } }>;
}

export interface ErrorBody {
  error?: { code?: string; message?: string };
}
