// The calibration table a pack keeps next to its float detector (derived data, like TensorRT's
// calibration cache): how the ranges were found, on which photos, which Convs stay float, and the
// ranges. Installs make the int8 detector from the float one and this table alone, without photos;
// the result is byte-for-byte the same everywhere, and its sha256 is in the manifest.
import { decodeModel } from '../onnx/read';
import { encodeModel } from '../onnx/write';
import { activationTensors, quantizeModel, type ActivationType, type Ranges } from './qdq';

export interface CalibrationTable {
  /** `minmax`, or `pNN` for the percentile method. */
  method: string;
  /** The calibration photos (file names of ../shared/fixtures/photos-dev), never reported on. */
  photos: string[];
  activations: ActivationType;
  floatConvs: string[];
  ranges: Ranges;
}

/** Reads a table, checking its shape; throws an Error naming what is wrong. */
export function parseCalibrationTable(text: string): CalibrationTable {
  const t = JSON.parse(text) as Partial<CalibrationTable>;
  const ok =
    typeof t.method === 'string' &&
    Array.isArray(t.photos) &&
    (t.activations === 'uint8' || t.activations === 'int8') &&
    Array.isArray(t.floatConvs) &&
    typeof t.ranges === 'object' &&
    t.ranges !== null &&
    Object.values(t.ranges).every((r) => Array.isArray(r) && r.length === 2 && r.every(Number.isFinite) && r[0]! <= r[1]!);
  if (!ok) throw new Error('calibration table: expected {method, photos, activations, floatConvs, ranges: {tensor: [min, max]}}');
  return t as CalibrationTable;
}

/** The int8 QDQ model of `float` under `table`; throws when the table does not fit the model. */
export function int8FromTable(float: Buffer, table: CalibrationTable): Buffer {
  const model = decodeModel(float);
  const floatConvs = new Set(table.floatConvs);
  const missing = activationTensors(model, floatConvs).filter((name) => !table.ranges[name]);
  if (missing.length > 0) throw new Error(`calibration table has no range for ${missing.length} tensors of this model (first: ${missing[0]})`);
  return encodeModel(quantizeModel(model, { ranges: table.ranges, floatConvs, activationType: table.activations }));
}
