// Calibration of activation ranges for static quantization: the float model is run with the
// tensors to quantize exposed as extra graph outputs, once per calibration input, and each
// tensor's range is taken over all of them: `minmax` (the extremes seen) or `percentile` (per input
// the given lower and upper quantiles of a strided sample, averaged over inputs, which ignores
// rare outliers that would coarsen the step for everything else).
import type { FloatTensor } from '../../native/addon';
import { encodeModel, type OnnxModel } from '../onnx/write';
import type { Ranges } from './qdq';

export type RangeMethod = { kind: 'minmax' } | { kind: 'percentile'; percentile: number };

/** Values sampled per tensor and input for a percentile (a stride over the tensor). */
const SAMPLE = 1 << 16;

/** The model with `tensors` appended to its outputs (shape left open). */
export function exposing(model: OnnxModel, tensors: string[]): Buffer {
  const outputs = [...model.graph.outputs, ...tensors.map((name) => ({ name }))];
  return encodeModel({ ...model, graph: { ...model.graph, outputs } });
}

function extremes(data: Float32Array): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < data.length; i++) {
    const v = data[i]!;
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  return [lo, hi];
}

function quantiles(data: Float32Array, percentile: number): [number, number] {
  const stride = Math.max(1, Math.floor(data.length / SAMPLE));
  const sample = new Float32Array(Math.ceil(data.length / stride));
  for (let i = 0, j = 0; i < data.length; i += stride, j++) sample[j] = data[i]!;
  sample.sort();
  const at = (p: number) => sample[Math.min(sample.length - 1, Math.max(0, Math.round((p / 100) * (sample.length - 1))))]!;
  return [at(100 - percentile), at(percentile)];
}

/**
 * Ranges of `tensors` over `inputs` (each one Run's float inputs), `run` being one Run of a model
 * (the addon's runModel).
 */
export async function calibrate(
  model: OnnxModel,
  tensors: string[],
  inputs: FloatTensor[][],
  method: RangeMethod,
  run: (model: Buffer, inputs: FloatTensor[]) => Promise<FloatTensor[]>,
): Promise<Ranges> {
  const exposed = exposing(model, tensors);
  const first = model.graph.outputs.length;
  const seen = tensors.map(() => ({ lo: Infinity, hi: -Infinity, loSum: 0, hiSum: 0 }));
  for (const input of inputs) {
    const outputs = await run(exposed, input);
    tensors.forEach((name, i) => {
      const data = outputs[first + i]?.data;
      if (!data) throw new Error(`calibration: the model gave no values for ${name}`);
      const s = seen[i]!;
      const [lo, hi] = extremes(data);
      s.lo = Math.min(s.lo, lo);
      s.hi = Math.max(s.hi, hi);
      if (method.kind === 'percentile') {
        const [qlo, qhi] = quantiles(data, method.percentile);
        s.loSum += qlo;
        s.hiSum += qhi;
      }
    });
  }
  const ranges: Ranges = {};
  tensors.forEach((name, i) => {
    const s = seen[i]!;
    ranges[name] = method.kind === 'minmax' ? [s.lo, s.hi] : [s.loSum / inputs.length, s.hiSum / inputs.length];
  });
  return ranges;
}
