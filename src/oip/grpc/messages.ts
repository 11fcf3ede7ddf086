// The protocol's messages as @grpc/proto-loader hands them over (keepCase, longs as numbers, bytes as
// Buffers, oneofs named), and their conversion to and from the protocol-neutral call (../infer.ts).
import { validationError } from '../../errors';
import type { AnalyzeItem } from '../../native/addon';
import { rawNumbers, joinBytesElements, splitBytesElements } from '../bytes-elements';
import type { InferAnswer, InferCall, InferInput } from '../infer';

export interface InferParameter {
  parameter_choice?: 'bool_param' | 'int64_param' | 'string_param' | 'double_param' | 'uint64_param';
  bool_param?: boolean;
  int64_param?: number;
  string_param?: string;
  double_param?: number;
  uint64_param?: number;
}

interface InputTensor {
  name: string;
  datatype: string;
  shape: number[];
  contents?: { bytes_contents?: Buffer[] } | null;
}

export interface ModelInferRequest {
  model_name: string;
  model_version: string;
  id: string;
  parameters: Record<string, InferParameter>;
  inputs: InputTensor[];
  outputs: Array<{ name: string }>;
  raw_input_contents: Buffer[];
}

export interface ModelInferResponse {
  model_name: string;
  model_version: string;
  id: string;
  outputs: Array<{ name: string; datatype: string; shape: number[] }>;
  raw_output_contents: Buffer[];
}

/** A parameter's value, whichever field of the oneof carries it. */
export function parameterValue(p: InferParameter | undefined): unknown {
  if (!p?.parameter_choice) return undefined;
  const value = p[p.parameter_choice];
  // A number sent as a string ("0.4") is a number here; anything else keeps its type for the checks.
  if (p.parameter_choice === 'string_param' && typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
  return value;
}

/** The request as a protocol-neutral call; BYTES elements come from bytes_contents or raw_input_contents. */
export function toInferCall(request: ModelInferRequest): InferCall {
  const raw = request.raw_input_contents ?? [];
  if (raw.length > 0 && raw.length !== request.inputs.length) {
    throw validationError([{ field: 'raw_input_contents', message: `Has ${raw.length} entries for ${request.inputs.length} inputs; one per input, in order.` }]);
  }
  const inputs = request.inputs.map((t, i): InferInput => {
    const listed = t.contents?.bytes_contents ?? [];
    if (raw.length > 0 && listed.length > 0) {
      throw validationError([{ field: `inputs[${i}].contents`, message: 'Send a tensor in contents or in raw_input_contents, not both.' }]);
    }
    let elements: Buffer[] | null = listed.length > 0 ? listed : null;
    if (raw.length > 0 && t.datatype === 'BYTES') {
      elements = splitBytesElements(raw[i]!);
      if (!elements) throw validationError([{ field: `raw_input_contents[${i}]`, message: 'BYTES data must be elements of a 4-byte little-endian length and that many bytes.' }]);
    }
    const items: AnalyzeItem[] | null = elements && elements.map((data) => ({ data, encoding: 'bytes' }));
    return { name: t.name, datatype: t.datatype, shape: t.shape, items };
  });
  return {
    model: request.model_name,
    version: request.model_version,
    id: request.id,
    inputs,
    outputs: request.outputs.length > 0 ? request.outputs.map((o) => o.name) : null,
    threshold: parameterValue(request.parameters?.threshold),
  };
}

/** The answer with every output as raw contents (BYTES length-prefixed, numbers little-endian). */
export function toInferResponse(answer: InferAnswer): ModelInferResponse {
  return {
    model_name: answer.model,
    model_version: answer.version,
    id: answer.id,
    outputs: answer.outputs.map((o) => ({ name: o.name, datatype: o.datatype, shape: o.shape })),
    raw_output_contents: answer.outputs.map((o) => (o.datatype === 'BYTES' ? joinBytesElements(o.values as string[]) : rawNumbers(o.datatype, o.values as number[]))),
  };
}
