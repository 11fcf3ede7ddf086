// An infer answer's JSON header (REST), written directly: it is built for every answer, and
// JSON.stringify of the same object costs twice as much. The text is exactly what JSON.stringify
// writes for { model_name, model_version, id (when not empty), outputs: [{ name, datatype, shape,
// data }] }, an output asked as binary having parameters.binary_data_size in place of data.
import { joinBytesElements, rawNumbers } from './bytes-elements';
import type { InferAnswer } from './infer';

/** The REST answer: its fields but Server-Timing, in the order they go, and its body (the JSON, then any binary outputs). */
export function inferRestAnswer(answer: InferAnswer, requested: readonly string[] | 'all', requestId: string): { headers: Record<string, string>; body: string | Buffer } {
  const parts = inferAnswerParts(answer, new Set(requested === 'all' ? answer.outputs.map((o) => o.name) : requested));
  if (parts.tail.length === 0) return { headers: { 'Content-Type': 'application/json', 'X-Request-ID': requestId }, body: parts.json };
  const head = Buffer.from(parts.json, 'utf8');
  return {
    headers: { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(head.length), 'X-Request-ID': requestId },
    body: Buffer.concat([head, ...parts.tail]),
  };
}

/** The answer's JSON header, and the bytes of the outputs in `binary`, in order. */
export function inferAnswerParts(answer: InferAnswer, binary: ReadonlySet<string>): { json: string; tail: Buffer[] } {
  const tail: Buffer[] = [];
  let json = `{"model_name":${JSON.stringify(answer.model)},"model_version":${JSON.stringify(answer.version)}`;
  if (answer.id) json += `,"id":${JSON.stringify(answer.id)}`;
  json += ',"outputs":[';
  answer.outputs.forEach((o, i) => {
    json += `${i === 0 ? '' : ','}{"name":${JSON.stringify(o.name)},"datatype":${JSON.stringify(o.datatype)},"shape":[${o.shape.map(jsonNumber).join(',')}],`;
    if (binary.has(o.name)) {
      const bytes = o.datatype === 'BYTES' ? joinBytesElements(o.values as string[]) : rawNumbers(o.datatype, o.values as number[]);
      tail.push(bytes);
      json += `"parameters":{"binary_data_size":${bytes.length}}}`;
    } else {
      json += `"data":[${jsonValues(o.values)}]}`;
    }
  });
  return { json: `${json}]}`, tail };
}

function jsonValues(values: string[] | number[]): string {
  let text = '';
  for (let i = 0; i < values.length; i++) {
    const v = values[i]!;
    text += `${i === 0 ? '' : ','}${typeof v === 'string' ? JSON.stringify(v) : jsonNumber(v)}`;
  }
  return text;
}

/** A number as JSON.stringify writes it (null when not finite). */
function jsonNumber(v: number): string {
  return Number.isFinite(v) ? String(v) : 'null';
}
