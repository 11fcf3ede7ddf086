// An infer request's reading (REST): its JSON header and binary tail split, and its tensors checked
// into a protocol-neutral call, malformed structure a 422 naming the field.
import { ApiError, validationError, type FieldError } from '../errors';
import type { AnalyzeItem } from '../native/addon';
import { splitBytesElements } from './bytes-elements';
import type { InferCall, InferInput } from './infer';

export const HEADER_LENGTH = 'inference-header-content-length';

export function splitBody(body: Buffer, headerLength: string | undefined): { json: Buffer; binary: Buffer } {
  if (headerLength === undefined) return { json: body, binary: Buffer.alloc(0) };
  const length = /^\d{1,15}$/.test(headerLength) ? Number(headerLength) : NaN;
  if (!(length <= body.length)) {
    throw new ApiError('bad_request', `${HEADER_LENGTH} must be a whole number of bytes no larger than the body (${body.length}).`, { header: HEADER_LENGTH });
  }
  return { json: body.subarray(0, length), binary: body.subarray(length) };
}

export interface ParsedRequest {
  call: InferCall;
  /** Outputs to send as binary data: named ones, or all (`binary_data_output`). */
  binaryOutputs: string[] | 'all';
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The request's JSON header and binary tail as a protocol-neutral call; malformed structure is a 422 naming the field. */
export function parseInferRequest(body: Record<string, unknown>, binary: Buffer, model: string, version: string | undefined): ParsedRequest {
  const errors: FieldError[] = [];
  const parameters = isObject(body.parameters) ? body.parameters : {};
  if (body.parameters !== undefined && !isObject(body.parameters)) errors.push({ field: 'parameters', message: 'Must be an object.' });
  if (body.id !== undefined && typeof body.id !== 'string') errors.push({ field: 'id', message: 'Must be a string.' });
  if (!Array.isArray(body.inputs)) errors.push({ field: 'inputs', message: 'Field required: an array of input tensors.' });
  let offset = 0;
  const inputs: InferInput[] = (Array.isArray(body.inputs) ? body.inputs : []).map((raw: unknown, i): InferInput => {
    const field = `inputs[${i}]`;
    const t = isObject(raw) ? raw : {};
    if (!isObject(raw)) errors.push({ field, message: 'Must be an object.' });
    if (typeof t.name !== 'string') errors.push({ field: `${field}.name`, message: 'Field required: a string.' });
    if (typeof t.datatype !== 'string') errors.push({ field: `${field}.datatype`, message: 'Field required: a string.' });
    const shape = Array.isArray(t.shape) && t.shape.every((d) => Number.isInteger(d)) ? (t.shape as number[]) : null;
    if (!shape) errors.push({ field: `${field}.shape`, message: 'Field required: an array of integers.' });
    const tensorParameters = isObject(t.parameters) ? t.parameters : {};
    let items: AnalyzeItem[] | null = null;
    if (tensorParameters.binary_data_size !== undefined) {
      const size = tensorParameters.binary_data_size;
      if (!Number.isInteger(size) || (size as number) < 0 || offset + (size as number) > binary.length) {
        errors.push({ field: `${field}.parameters.binary_data_size`, message: `Must be a whole number of bytes within the ${binary.length} bytes after the JSON header.` });
      } else {
        const elements = t.datatype === 'BYTES' ? splitBytesElements(binary.subarray(offset, offset + (size as number))) : null;
        if (t.datatype === 'BYTES' && !elements) {
          errors.push({ field: `${field}.parameters.binary_data_size`, message: 'BYTES data must be elements of a 4-byte little-endian length and that many bytes.' });
        }
        items = elements && elements.map((data) => ({ data, encoding: 'bytes' }));
        offset += size as number;
      }
    } else if (t.data !== undefined) {
      if (t.datatype === 'BYTES' && !(Array.isArray(t.data) && t.data.every((d) => typeof d === 'string'))) {
        errors.push({ field: `${field}.data`, message: 'BYTES data in JSON must be an array of strings, each an image in base64.' });
      } else if (Array.isArray(t.data) && t.datatype === 'BYTES') {
        items = (t.data as string[]).map((data) => ({ data, encoding: 'base64-strict' }));
      }
    }
    return { name: String(t.name), datatype: String(t.datatype), shape: shape ?? [], items };
  });
  if (offset !== binary.length) errors.push({ field: 'inputs', message: `The binary_data_size of the inputs add up to ${offset} bytes; ${binary.length} follow the JSON header.` });
  const outputs = body.outputs === undefined ? null : Array.isArray(body.outputs) ? body.outputs : null;
  if (body.outputs !== undefined && outputs === null) errors.push({ field: 'outputs', message: 'Must be an array of requested outputs.' });
  const binaryOutputs: string[] = [];
  const names = (outputs ?? []).map((raw: unknown, i) => {
    const o = isObject(raw) ? raw : {};
    if (typeof o.name !== 'string') errors.push({ field: `outputs[${i}].name`, message: 'Field required: a string.' });
    if (isObject(o.parameters) && o.parameters.binary_data === true) binaryOutputs.push(String(o.name));
    return String(o.name);
  });
  if (errors.length > 0) throw validationError(errors);
  return {
    call: { model, version, id: (body.id as string | undefined) ?? '', inputs, outputs: outputs && names, threshold: parameters.threshold },
    binaryOutputs: parameters.binary_data_output === true ? 'all' : binaryOutputs,
  };
}
