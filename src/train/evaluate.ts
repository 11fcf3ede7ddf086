// Seeded splits, metrics and model selection for the comfort head: a stratified train/validation
// split, k-fold cross-validation of the L2 strength, and the threshold with the best balanced
// accuracy. Labels are 0/1 (1 = discomfort, the score's class).
import { fitLogistic, predict } from './logistic';

/** Deterministic pseudo-random numbers in [0, 1) (mulberry32). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function shuffled<T>(items: readonly T[], random: () => number): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** Indices per fold (k folds), each class spread evenly over the folds. */
export function stratifiedFolds(labels: readonly number[], k: number, seed: number): number[][] {
  const random = seededRandom(seed);
  const folds: number[][] = Array.from({ length: k }, () => []);
  let next = 0;
  for (const cls of [0, 1]) {
    const members = shuffled(labels.flatMap((y, i) => (y === cls ? [i] : [])), random);
    for (const i of members) folds[next++ % k]!.push(i);
  }
  return folds.map((f) => f.sort((a, b) => a - b));
}

/** A stratified split: about `fraction` of each class (at least one when it has two) to validation. */
export function stratifiedSplit(labels: readonly number[], fraction: number, seed: number): { train: number[]; validation: number[] } {
  const random = seededRandom(seed);
  const train: number[] = [];
  const validation: number[] = [];
  for (const cls of [0, 1]) {
    const members = shuffled(labels.flatMap((y, i) => (y === cls ? [i] : [])), random);
    const take = members.length < 2 ? 0 : Math.min(members.length - 1, Math.max(1, Math.round(members.length * fraction)));
    validation.push(...members.slice(0, take));
    train.push(...members.slice(take));
  }
  return { train: train.sort((a, b) => a - b), validation: validation.sort((a, b) => a - b) };
}

export interface Confusion {
  /** Discomfort called discomfort. */
  tp: number;
  fn: number;
  fp: number;
  /** Comfort called comfort. */
  tn: number;
}

export function confusion(labels: readonly number[], scores: readonly number[], threshold: number): Confusion {
  const c = { tp: 0, fn: 0, fp: 0, tn: 0 };
  labels.forEach((y, i) => {
    const called = scores[i]! >= threshold;
    if (y === 1) c[called ? 'tp' : 'fn']++;
    else c[called ? 'fp' : 'tn']++;
  });
  return c;
}

/** Mean of the two classes' recalls (0.5 for any constant answer). */
export function balancedAccuracy(c: Confusion): number {
  const recall = (hit: number, miss: number) => (hit + miss === 0 ? 0 : hit / (hit + miss));
  return (recall(c.tp, c.fn) + recall(c.tn, c.fp)) / 2;
}

/** Area under the ROC curve (ties count half). */
export function rocAuc(labels: readonly number[], scores: readonly number[]): number {
  let pairs = 0;
  let wins = 0;
  labels.forEach((y, i) => {
    if (y !== 1) return;
    labels.forEach((z, j) => {
      if (z !== 0) return;
      pairs++;
      wins += scores[i]! > scores[j]! ? 1 : scores[i] === scores[j] ? 0.5 : 0;
    });
  });
  return pairs === 0 ? NaN : wins / pairs;
}

/**
 * The threshold with the best balanced accuracy: candidates are the midpoints between sorted
 * distinct scores (and 0.5 itself); ties go to the one nearest 0.5.
 */
export function bestThreshold(labels: readonly number[], scores: readonly number[]): { threshold: number; balancedAccuracy: number } {
  const sorted = [...new Set(scores)].sort((a, b) => a - b);
  const candidates = [0.5, ...sorted.slice(1).map((s, i) => (s + sorted[i]!) / 2)];
  let best = { threshold: 0.5, balancedAccuracy: -1 };
  for (const t of candidates) {
    const ba = balancedAccuracy(confusion(labels, scores, t));
    const closer = Math.abs(t - 0.5) < Math.abs(best.threshold - 0.5);
    if (ba > best.balancedAccuracy + 1e-12 || (Math.abs(ba - best.balancedAccuracy) <= 1e-12 && closer)) {
      best = { threshold: t, balancedAccuracy: ba };
    }
  }
  return best;
}

/** Class-weighted mean log-loss (each class counts half). */
export function balancedLogLoss(labels: readonly number[], scores: readonly number[]): number {
  const sums = [0, 0];
  const counts = [0, 0];
  labels.forEach((y, i) => {
    const p = Math.min(Math.max(scores[i]!, 1e-12), 1 - 1e-12);
    sums[y]! += -Math.log(y === 1 ? p : 1 - p);
    counts[y]!++;
  });
  return (sums[0]! / Math.max(counts[0]!, 1) + sums[1]! / Math.max(counts[1]!, 1)) / 2;
}

export const LAMBDAS = [1e-4, 1e-3, 1e-2, 1e-1, 1, 10];

export interface CrossValidation {
  lambda: number;
  folds: number;
  /** Per lambda: held-out balanced log-loss and balanced accuracy at 0.5, averaged over the folds. */
  table: Array<{ lambda: number; logLoss: number; balancedAccuracy: number }>;
}

/** Picks the L2 strength with the lowest held-out balanced log-loss over k stratified folds. */
export function crossValidateLambda(x: readonly Float64Array[], labels: readonly number[], seed: number, k = 5): CrossValidation {
  const smallest = Math.min(labels.filter((y) => y === 1).length, labels.filter((y) => y === 0).length);
  const folds = Math.min(k, smallest);
  if (folds < 2) throw new Error('cross-validation needs at least 2 training examples of each class');
  const split = stratifiedFolds(labels, folds, seed);
  const table = LAMBDAS.map((lambda) => {
    let logLoss = 0;
    let accuracy = 0;
    for (const held of split) {
      const heldSet = new Set(held);
      const trainIdx = labels.map((_, i) => i).filter((i) => !heldSet.has(i));
      const head = fitLogistic(trainIdx.map((i) => x[i]!), trainIdx.map((i) => labels[i]!), { lambda });
      const heldLabels = held.map((i) => labels[i]!);
      const scores = held.map((i) => predict(head, x[i]!));
      logLoss += balancedLogLoss(heldLabels, scores) / split.length;
      accuracy += balancedAccuracy(confusion(heldLabels, scores, 0.5)) / split.length;
    }
    return { lambda, logLoss, balancedAccuracy: accuracy };
  });
  const best = table.reduce((a, b) => (b.logLoss < a.logLoss ? b : a));
  return { lambda: best.lambda, folds, table };
}
