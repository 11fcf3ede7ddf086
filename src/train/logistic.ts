// L2-regularised logistic regression on standardised features, by Newton's method with a
// backtracking line search (the loss is smooth and, with lambda > 0, strongly convex: one optimum,
// reached in a few dozen steps). Classes are weighted to count equally (each class's weights sum
// to n / 2), as balanced accuracy counts them; the intercept is not penalised.
//
//   loss(w, b) = sum_i c_i log(1 + exp(-s_i (w . z_i + b))) / n + lambda / 2 |w|^2,
//   z = (x - mean) / std, s_i = +1 for label 1, -1 for label 0.
//
// Photos are usually far fewer than embedding channels, so each Newton step solves in the photos'
// space: (lambda I + Z^T D Z)^-1 v = (v - Z^T S (lambda I + S Z Z^T S)^-1 S Z v) / lambda with
// S = sqrt(D) (Woodbury), the intercept by block elimination.

export interface Standardizer {
  mean: Float64Array;
  std: Float64Array;
}

/** A fitted head on raw features: p(label 1) = sigmoid(weights . x + bias). */
export interface LogisticHead {
  weights: Float64Array;
  bias: number;
  lambda: number;
  iterations: number;
}

export interface FitOptions {
  lambda: number;
  maxIterations?: number;
  /** Stop when the gradient's largest component falls below this. */
  tolerance?: number;
}

export function sigmoid(z: number): number {
  return z >= 0 ? 1 / (1 + Math.exp(-z)) : Math.exp(z) / (1 + Math.exp(z));
}

/** Per-feature mean and standard deviation (1 where a feature is constant). */
export function standardizer(x: readonly Float64Array[]): Standardizer {
  const d = x[0]?.length ?? 0;
  const mean = new Float64Array(d);
  const std = new Float64Array(d);
  for (const row of x) for (let j = 0; j < d; j++) mean[j]! += row[j]! / x.length;
  for (const row of x) for (let j = 0; j < d; j++) std[j]! += (row[j]! - mean[j]!) ** 2 / x.length;
  for (let j = 0; j < d; j++) std[j] = std[j]! > 1e-12 ? Math.sqrt(std[j]!) : 1;
  return { mean, std };
}

function standardize(x: readonly Float64Array[], s: Standardizer): Float64Array[] {
  return x.map((row) => row.map((v, j) => (v - s.mean[j]!) / s.std[j]!));
}

function dot(a: Float64Array, b: Float64Array): number {
  let sum = 0;
  for (let j = 0; j < a.length; j++) sum += a[j]! * b[j]!;
  return sum;
}

/** Solves M y = v for symmetric positive definite M (n x n, row-major), in place of a Cholesky factor. */
function choleskySolver(m: Float64Array, n: number): (v: Float64Array) => Float64Array {
  const l = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      let sum = m[i * n + j]!;
      for (let k = 0; k < j; k++) sum -= l[i * n + k]! * l[j * n + k]!;
      l[i * n + j] = i === j ? Math.sqrt(Math.max(sum, 1e-300)) : sum / l[j * n + j]!;
    }
  }
  return (v) => {
    const y = Float64Array.from(v);
    for (let i = 0; i < n; i++) {
      for (let k = 0; k < i; k++) y[i]! -= l[i * n + k]! * y[k]!;
      y[i]! /= l[i * n + i]!;
    }
    for (let i = n - 1; i >= 0; i--) {
      for (let k = i + 1; k < n; k++) y[i]! -= l[k * n + i]! * y[k]!;
      y[i]! /= l[i * n + i]!;
    }
    return y;
  };
}

function classWeights(labels: readonly number[]): number[] {
  const positives = labels.filter((y) => y === 1).length;
  const negatives = labels.length - positives;
  if (positives === 0 || negatives === 0) throw new Error('both classes need at least one example');
  return labels.map((y) => labels.length / (2 * (y === 1 ? positives : negatives)));
}

function softplus(z: number): number {
  return z > 0 ? z + Math.log1p(Math.exp(-z)) : Math.log1p(Math.exp(z));
}

/** Fits on features x (rows) and labels 0/1; returns the head mapped back to raw features. */
export function fitLogistic(x: readonly Float64Array[], labels: readonly number[], options: FitOptions): LogisticHead {
  if (x.length !== labels.length || x.length === 0) throw new Error('need as many labels as rows, and at least one row');
  const lambda = options.lambda;
  if (!(lambda > 0)) throw new Error('lambda must be > 0');
  const s = standardizer(x);
  const z = standardize(x, s);
  const c = classWeights(labels);
  const n = z.length;
  const d = z[0]!.length;
  const sign = labels.map((y) => (y === 1 ? 1 : -1));
  const gram = new Float64Array(n * n);
  for (let i = 0; i < n; i++) for (let j = 0; j <= i; j++) gram[i * n + j] = gram[j * n + i] = dot(z[i]!, z[j]!);
  const zt = (v: ArrayLike<number>) => {
    const out = new Float64Array(d);
    for (let i = 0; i < n; i++) for (let j = 0; j < d; j++) out[j]! += v[i]! * z[i]![j]!;
    return out;
  };
  const loss = (margins: Float64Array, w: Float64Array) =>
    margins.reduce((sum, m, i) => sum + (c[i]! * softplus(-sign[i]! * m)) / n, 0) + (lambda / 2) * dot(w, w);

  let w = new Float64Array(d);
  let b = 0;
  let margins = new Float64Array(n);
  let current = loss(margins, w);
  const maxIterations = options.maxIterations ?? 100;
  const tolerance = options.tolerance ?? 1e-8;
  let iterations = 0;
  for (; iterations < maxIterations; iterations++) {
    const p = margins.map((m) => sigmoid(m));
    const r = p.map((pi, i) => (c[i]! * (pi - (labels[i] === 1 ? 1 : 0))) / n);
    const gw = zt(r).map((g, j) => g + lambda * w[j]!);
    const gb = r.reduce((a, v) => a + v, 0);
    if (Math.max(Math.abs(gb), ...gw.map(Math.abs)) < tolerance) break;
    const dd = p.map((pi, i) => (c[i]! * pi * (1 - pi)) / n);
    const sq = dd.map(Math.sqrt);
    const m = new Float64Array(n * n);
    for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) m[i * n + j] = sq[i]! * gram[i * n + j]! * sq[j]! + (i === j ? lambda : 0);
    const solve = choleskySolver(m, n);
    const inverse = (v: Float64Array) => {
      const inner = solve(Float64Array.from(z, (row, i) => sq[i]! * dot(row, v)));
      const back = zt(inner.map((v2, i) => v2 * sq[i]!));
      return v.map((vj, j) => (vj - back[j]!) / lambda);
    };
    const u = zt(dd);
    const aG = inverse(gw);
    const aU = inverse(u);
    const db = (gb - dot(u, aG)) / (dd.reduce((a, v) => a + v, 0) - dot(u, aU));
    const dw = aG.map((v, j) => v - db * aU[j]!);
    const slope = dot(gw, dw) + gb * db;
    const shift = z.map((row) => dot(row, dw) + db);
    let t = 1;
    for (; t > 1e-10; t /= 2) {
      const nw = w.map((v, j) => v - t * dw[j]!);
      const nm = margins.map((mi, i) => mi - t * shift[i]!);
      const next = loss(nm, nw);
      if (next <= current - 1e-4 * t * slope) {
        w = nw;
        b -= t * db;
        margins = nm;
        current = next;
        break;
      }
    }
    if (t <= 1e-10) break; // no descent left: at the optimum to rounding
  }
  // Back to raw features: w . (x - mean) / std + b.
  const weights = w.map((v, j) => v / s.std[j]!);
  const bias = b - dot(weights, s.mean);
  return { weights, bias, lambda, iterations };
}

export function predict(head: LogisticHead, x: Float64Array): number {
  return sigmoid(dot(head.weights, x) + head.bias);
}
