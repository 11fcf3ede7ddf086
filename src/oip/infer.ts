// One inference call of the protocol, whichever transport carried it (rest.ts, grpc/): the tensors
// checked against the model's (tensors.ts), one version picked for the whole call (a canary draws its
// share; a named version must be the serving one or the canary), and each image submitted to that
// version's batcher on its own, so the images of a call batch with everything else in flight.
import { ApiError, validationError, type FieldError } from '../errors';
import type { AnalyzeItem } from '../native/addon';
import type { AnalyzeOptions } from '../packs/model';
import type { ModelRegistry } from '../packs/registry';
import { analyzePicked, appliedThreshold, pickVersion } from '../packs/routed';
import { ImageError } from '../pipeline/analysis';
import { THRESHOLD_RANGE } from '../v2/schemas';
import { INPUT, OUTPUT_NAMES, outputTensors, type OutputTensor } from './tensors';

export interface InferInput {
  name: string;
  datatype: string;
  shape: number[];
  /** The elements, each one encoded image; null when the tensor carried no data. */
  items: AnalyzeItem[] | null;
}

export interface InferCall {
  model: string;
  /** Empty or undefined: the version the pack's routing picks. */
  version?: string | undefined;
  id: string;
  inputs: InferInput[];
  /** Output names requested; null: all of them. */
  outputs: string[] | null;
  /** The `threshold` parameter as sent; undefined when absent. */
  threshold: unknown;
}

export interface InferAnswer {
  model: string;
  version: string;
  id: string;
  outputs: OutputTensor[];
}

export async function infer(registry: ModelRegistry, call: InferCall, options: AnalyzeOptions): Promise<InferAnswer> {
  const pick = pickVersion(registry, call.model, call.version || undefined);
  const maxImages = pick.model.batcher.options.maxQueue;
  const { items, outputs, threshold } = checkCall(call, maxImages);
  const analyses = await Promise.all(
    items.map((item, index) =>
      analyzePicked(pick, item, options, threshold).then(
        (routed) => routed.analysis,
        (error: unknown) => {
          if (error instanceof ImageError) throw new ApiError('invalid_image', `Image ${index}: ${error.message}`, { index });
          throw error;
        },
      ),
    ),
  );
  const applied = appliedThreshold(pick.model, threshold);
  return { model: pick.model.id, version: pick.model.version, id: call.id, outputs: outputTensors(analyses, applied, outputs) };
}

function checkCall(call: InferCall, maxImages: number): { items: AnalyzeItem[]; outputs: ReadonlySet<string>; threshold: number | null } {
  const errors: FieldError[] = [];
  const input = call.inputs[0];
  if (call.inputs.length !== 1 || !input) {
    throw validationError([{ field: 'inputs', message: `Exactly one input tensor, '${INPUT.name}', is expected; got ${call.inputs.length}.` }]);
  }
  if (input.name !== INPUT.name) errors.push({ field: 'inputs[0].name', message: `Unknown input '${input.name}'; the input is '${INPUT.name}'.` });
  if (input.datatype !== INPUT.datatype) {
    errors.push({ field: 'inputs[0].datatype', message: `Input '${INPUT.name}' is ${INPUT.datatype} (encoded images), not ${input.datatype}.` });
  }
  const n = input.shape[0];
  if (input.shape.length !== 1 || n === undefined || !Number.isInteger(n) || n < 1 || n > maxImages) {
    errors.push({ field: 'inputs[0].shape', message: `Shape must be [N] with N from 1 to ${maxImages} images; got [${input.shape.join(', ')}].` });
  } else if (input.datatype !== INPUT.datatype) {
    // Its data is not images: only the datatype is reported.
  } else if (input.items === null) {
    errors.push({ field: 'inputs[0].data', message: `Input '${INPUT.name}' carries no data.` });
  } else if (input.items.length !== n) {
    errors.push({ field: 'inputs[0].data', message: `Input '${INPUT.name}' has ${input.items.length} elements; its shape [${n}] says ${n}.` });
  }
  const unknown = (call.outputs ?? []).findIndex((name) => !OUTPUT_NAMES.has(name));
  if (unknown >= 0) {
    errors.push({ field: `outputs[${unknown}].name`, message: `Unknown output '${call.outputs![unknown]}'; the outputs are ${[...OUTPUT_NAMES].join(', ')}.` });
  }
  const threshold = call.threshold ?? null;
  if (threshold !== null && (typeof threshold !== 'number' || !(threshold >= THRESHOLD_RANGE.minimum && threshold <= THRESHOLD_RANGE.maximum))) {
    errors.push({ field: 'parameters.threshold', message: `Parameter 'threshold' must be a number from ${THRESHOLD_RANGE.minimum} to ${THRESHOLD_RANGE.maximum}.` });
  }
  if (errors.length > 0) throw validationError(errors);
  return { items: input.items!, outputs: call.outputs ? new Set(call.outputs) : OUTPUT_NAMES, threshold: threshold as number | null };
}
