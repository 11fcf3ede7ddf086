// The comfort head of a pack with an ImageNet backbone: a logistic layer on the backbone's pooled
// features, kept as JSON { inputs, weights[inputs], bias } (a few kilobytes).
export const FEATURES = 1280;

export interface HeadWeights {
  weights: Float32Array;
  bias: number;
}

export function parseHead(text: string, what: string): HeadWeights {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`${what} is not valid JSON: ${(error as Error).message}`);
  }
  const h = json as { inputs?: unknown; weights?: unknown; bias?: unknown };
  const finite = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x);
  if (h.inputs !== FEATURES || !Array.isArray(h.weights) || h.weights.length !== FEATURES || !h.weights.every(finite) || !finite(h.bias)) {
    throw new Error(`${what} must be {"inputs": ${FEATURES}, "weights": [${FEATURES} finite numbers], "bias": a finite number}`);
  }
  return { weights: Float32Array.from(h.weights as number[]), bias: h.bias };
}

/** Deterministic text: float32 values in their shortest decimal form. */
export function encodeHead(head: { weights: ArrayLike<number>; bias: number }): string {
  const f32 = (x: number) => Number(Math.fround(x).toPrecision(9));
  return `${JSON.stringify({ inputs: FEATURES, weights: Array.from(head.weights, f32), bias: f32(head.bias) })}\n`;
}
