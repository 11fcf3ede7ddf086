// Error responses of an operation in the v2 ErrorResponse format (v2 and scan), built from the one
// error table so that every status, code and example matches what the service sends.
import { errorTable, type ErrorKind } from '../errors';
import { EXAMPLE_REQUEST_ID, jsonContent, type Example } from './openapi-util';

/** One error an operation can answer: its kind, when it happens, and optionally the example's details. */
export interface ErrorDoc {
  kind: ErrorKind;
  when: string;
  message?: string;
  details?: Record<string, unknown>;
}

/** Error kinds the v2 interface can answer: every kind not marked scan-only. */
export type V2ErrorKind = { [K in ErrorKind]: (typeof errorTable)[K] extends { scanOnly: true } ? never : K }[ErrorKind];

/** OpenAPI `responses` entries, one per status; each lists its codes and carries one example per error. */
export function errorResponses(errors: ErrorDoc[]): Record<string, unknown> {
  const byStatus = new Map<number, ErrorDoc[]>();
  for (const e of errors) byStatus.set(errorTable[e.kind].status, [...(byStatus.get(errorTable[e.kind].status) ?? []), e]);
  const responses: Record<string, unknown> = {};
  for (const [status, docs] of [...byStatus].sort(([a], [b]) => a - b)) {
    const examples: Record<string, Example> = {};
    for (const doc of docs) {
      const { code, message } = errorTable[doc.kind];
      examples[doc.kind] = {
        summary: `${code}: ${doc.when}`,
        value: { request_id: EXAMPLE_REQUEST_ID, error: { code, message: doc.message ?? message, details: doc.details ?? {} } },
      };
    }
    responses[String(status)] = {
      description: docs.map((d) => `\`${errorTable[d.kind].code}\`: ${d.when}`).join('; '),
      ...(status === 429 || status === 503 ? { headers: { 'Retry-After': { description: 'Seconds to wait before retrying', schema: { type: 'integer' } } } } : {}),
      content: jsonContent('ErrorResponse', examples),
    };
  }
  return responses;
}
