// The model's tensors in the Open Inference Protocol (docs/oip.md "Open Inference Protocol"): one BYTES
// input of encoded images, and per image the answer of /v2/predict as typed outputs. Values with no
// meaning for an image (no cat, no score) are written as documented fill values, since tensors have no null.
import { isDiscomfort, type Analysis } from '../pipeline/analysis';

export type Datatype = 'BYTES' | 'FP32' | 'INT32';

export interface TensorMetadata {
  name: string;
  datatype: Datatype;
  /** -1: any size (the number of images). */
  shape: number[];
}

export const INPUT: TensorMetadata = { name: 'image', datatype: 'BYTES', shape: [-1] };

export const OUTPUTS = [
  { name: 'detection', datatype: 'BYTES', shape: [-1] }, // detected | low_confidence | not_detected
  { name: 'confidence', datatype: 'FP32', shape: [-1] }, // the cat's detection confidence; 0 without a cat
  { name: 'box', datatype: 'FP32', shape: [-1, 4] }, // x_min, y_min, x_max, y_max in pixels; zeros without a cat
  { name: 'score', datatype: 'FP32', shape: [-1] }, // probability of discomfort; -1 unless detected
  { name: 'label', datatype: 'BYTES', shape: [-1] }, // comfort | discomfort; empty unless detected
  { name: 'image_size', datatype: 'INT32', shape: [-1, 2] }, // width, height
] as const satisfies readonly TensorMetadata[];

export type OutputName = (typeof OUTPUTS)[number]['name'];

export const OUTPUT_NAMES: ReadonlySet<string> = new Set(OUTPUTS.map((o) => o.name));

/** An output tensor's values, flattened row-major: strings for BYTES, numbers otherwise. */
export interface OutputTensor {
  name: OutputName;
  datatype: Datatype;
  shape: number[];
  values: string[] | number[];
}

/** Each output's values for the analyses of N images. */
const COLUMNS: Record<OutputName, (analyses: Analysis[], threshold: number) => string[] | number[]> = {
  detection: (analyses) => analyses.map((a) => a.detection),
  confidence: (analyses) => analyses.map((a) => a.cat?.confidence ?? 0),
  box: (analyses) => {
    const values: number[] = [];
    for (const a of analyses) values.push(...(a.cat?.box ?? [0, 0, 0, 0]));
    return values;
  },
  score: (analyses) => analyses.map((a) => a.score ?? -1),
  label: (analyses, threshold) => analyses.map((a) => (a.score === null ? '' : isDiscomfort(a.score, threshold) ? 'discomfort' : 'comfort')),
  image_size: (analyses) => {
    const values: number[] = [];
    for (const a of analyses) values.push(a.width, a.height);
    return values;
  },
};

/** The outputs named in `names` (in the table's order), for the analyses of N images. */
export function outputTensors(analyses: Analysis[], threshold: number, names: ReadonlySet<string>): OutputTensor[] {
  const tensors: OutputTensor[] = [];
  for (const o of OUTPUTS) {
    if (!names.has(o.name)) continue;
    const shape = o.shape.map((d) => (d === -1 ? analyses.length : d));
    tensors.push({ name: o.name, datatype: o.datatype, shape, values: COLUMNS[o.name](analyses, threshold) });
  }
  return tensors;
}
