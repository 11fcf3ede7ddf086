// From embeddings to a fitted head and its figures: the seeded stratified split, the L2 strength
// by cross-validation on the training part, the fit, and the validation figures (threshold chosen
// on validation for balanced accuracy, as the manifest's defaultThreshold).
import {
  balancedAccuracy,
  bestThreshold,
  confusion,
  crossValidateLambda,
  rocAuc,
  stratifiedSplit,
  type Confusion,
  type CrossValidation,
} from './evaluate';
import { fitLogistic, predict, type LogisticHead } from './logistic';

export interface HeadFigures {
  trainIndices: number[];
  validationIndices: number[];
  cv: CrossValidation;
  head: LogisticHead;
  threshold: number;
  /** At `threshold` (chosen on validation: optimistic). */
  balancedAccuracy: number;
  /** At 0.5 (chosen on nothing). */
  balancedAccuracyAtHalf: number;
  auc: number;
  confusion: Confusion;
}

export interface FitSettings {
  seed: number;
  validationFraction: number;
}

/** Fits a head on rows x with labels (1 = discomfort) and measures it on a held-out split. */
export function fitHead(x: readonly Float64Array[], labels: readonly number[], settings: FitSettings): HeadFigures {
  const { train, validation } = stratifiedSplit(labels, settings.validationFraction, settings.seed);
  const trainX = train.map((i) => x[i]!);
  const trainY = train.map((i) => labels[i]!);
  const valY = validation.map((i) => labels[i]!);
  if (trainY.filter((y) => y === 1).length < 2 || trainY.filter((y) => y === 0).length < 2 || new Set(valY).size < 2) {
    throw new Error('too few usable photos: training and validation need at least 3 photos of each class with a detected cat');
  }
  const cv = crossValidateLambda(trainX, trainY, settings.seed);
  const head = fitLogistic(trainX, trainY, { lambda: cv.lambda });
  const scores = validation.map((i) => predict(head, x[i]!));
  const best = bestThreshold(valY, scores);
  return {
    trainIndices: train,
    validationIndices: validation,
    cv,
    head,
    threshold: best.threshold,
    balancedAccuracy: best.balancedAccuracy,
    balancedAccuracyAtHalf: balancedAccuracy(confusion(valY, scores, 0.5)),
    auc: rocAuc(valY, scores),
    confusion: confusion(valY, scores, best.threshold),
  };
}
