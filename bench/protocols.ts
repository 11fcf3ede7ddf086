// Our service's ways in that the load runs use, each named by its URL: POST /v2/predict (JSON, the
// photo as base64), the Open Inference Protocol's REST infer with the binary tensor extension
// (http://HOST:PORT/v2/models/<model>/infer) and its gRPC ModelInfer (grpc://HOST:PORT/<model>,
// bench/grpc-client.ts). Here: the protocol a URL names, the request each sends per photo, and an
// OIP answer's outputs as the report's Answer.
import { joinBytesElements } from '../src/oip/bytes-elements';

/** A server's answer for one photo, compared across servers and protocols in latest.md. */
export interface Answer {
  detection: string;
  label: string | null;
  score: number | null;
}

export type LoadProtocol = 'predict' | 'oip-rest' | 'grpc';
/** Our protocols other than /v2/predict. */
export type OipProtocol = Exclude<LoadProtocol, 'predict'>;

export function protocolOf(url: string): LoadProtocol {
  const u = new URL(url);
  if (u.protocol === 'grpc:') return 'grpc';
  return /^\/v2\/models\/[^/]+(\/versions\/[^/]+)?\/infer$/.test(u.pathname) ? 'oip-rest' : 'predict';
}

/** /v2/predict's body: the photo as base64 in JSON. */
export function predictBody(photo: Buffer): string {
  return JSON.stringify({ image: photo.toString('base64') });
}

/** The OIP infer input tensor of one photo; `parameters` as the REST binary extension sends them. */
function imageTensor(parameters?: Record<string, number>): { name: string; datatype: string; shape: number[]; parameters?: Record<string, number> } {
  return { name: 'image', datatype: 'BYTES', shape: [1], ...(parameters && { parameters }) };
}

/** OIP REST infer with the binary tensor extension: a JSON header, then the photo as one length-prefixed BYTES element. */
export function oipBinaryRequest(photo: Buffer): { headers: Record<string, string>; body: Buffer } {
  const data = joinBytesElements([photo]);
  const header = Buffer.from(JSON.stringify({ inputs: [imageTensor({ binary_data_size: data.length })] }), 'utf8');
  return {
    headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(header.length) },
    body: Buffer.concat([header, data]),
  };
}

/** gRPC ModelInferRequest (proto-loader keepCase field names): the photo as raw_input_contents[0]. */
export function modelInferRequest(photo: Buffer, model: string): { model_name: string; inputs: unknown[]; raw_input_contents: Buffer[] } {
  return { model_name: model, inputs: [imageTensor()], raw_input_contents: [joinBytesElements([photo])] };
}

/** One image's OIP outputs (flattened values by name) as /v2/predict's fields: no label ('') or score (-1) is null. */
export function answerOfOutputs(outputs: Array<{ name: string; values: unknown[] }>): Answer {
  const first = (name: string) => outputs.find((o) => o.name === name)?.values[0];
  const label = first('label');
  const score = first('score');
  return {
    detection: String(first('detection')),
    label: typeof label === 'string' && label !== '' ? label : null,
    score: typeof score === 'number' && score !== -1 ? score : null,
  };
}
