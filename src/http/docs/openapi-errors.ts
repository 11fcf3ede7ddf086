// Error responses of an operation, built from the one error table so that every status, code and
// example matches what the service sends: in the v2 ErrorResponse format (v2 and scan) or another
// interface's (the Open Inference Protocol's).
import { ApiError, bodyTooLargeMessage, errorTable, type ErrorKind } from '../../errors';
import { errorResponse, HTTP_STATUS, type ErrorRenderer } from '../error-answers';
import { EXAMPLE_REQUEST_ID, jsonContent, type Example } from './openapi-util';

/** One error an operation can answer: its kind, when it happens, and optionally the example's details. */
export interface ErrorDoc {
  kind: ErrorKind;
  when: string;
  message?: string;
  details?: Record<string, unknown>;
}

/** Error kinds the v2 interface can answer: every kind not marked as another interface's only. */
export type V2ErrorKind = { [K in ErrorKind]: (typeof errorTable)[K] extends { only: string } ? never : K }[ErrorKind];

/** Errors documented alike wherever they can happen. */
export const COMMON_ERRORS = {
  internal: { kind: 'internal_error', when: 'unexpected failure; nothing internal is disclosed' },
  queueFull: { kind: 'overloaded', when: 'the queue is full or the deadline cannot be met; see `Retry-After`' },
} as const satisfies Record<string, ErrorDoc & { kind: V2ErrorKind }>;

/** The 413 of a body over `limit` (the documents show the default CATCOMFORT_MAX_BODY_BYTES). */
export function payloadTooLarge(limit: number): ErrorDoc & { kind: 'payload_too_large' } {
  return { kind: 'payload_too_large', when: 'request body larger than `CATCOMFORT_MAX_BODY_BYTES`', message: bodyTooLargeMessage(limit) };
}

/** How an interface writes an error body: its component schema, and the renderer the service answers with. */
export interface ErrorFormat {
  schema: string;
  render: ErrorRenderer;
}

const V2_FORMAT: ErrorFormat = { schema: 'ErrorResponse', render: errorResponse };

/** OpenAPI `responses` entries, one per status; each lists its codes and carries one example per error. */
export function errorResponses(errors: ErrorDoc[], format: ErrorFormat = V2_FORMAT): Record<string, unknown> {
  const byStatus = new Map<number, ErrorDoc[]>();
  for (const e of errors) byStatus.set(HTTP_STATUS[e.kind], [...(byStatus.get(HTTP_STATUS[e.kind]) ?? []), e]);
  const responses: Record<string, unknown> = {};
  for (const [status, docs] of [...byStatus].sort(([a], [b]) => a - b)) {
    const examples: Record<string, Example> = {};
    for (const doc of docs) {
      examples[doc.kind] = {
        summary: `${errorTable[doc.kind].code}: ${doc.when}`,
        value: JSON.parse(format.render(EXAMPLE_REQUEST_ID, new ApiError(doc.kind, doc.message, doc.details)).body) as unknown,
      };
    }
    responses[String(status)] = {
      description: docs.map((d) => `\`${errorTable[d.kind].code}\`: ${d.when}`).join('; '),
      ...(status === 429 || status === 503 ? { headers: { 'Retry-After': { description: 'Seconds to wait before retrying', schema: { type: 'integer' } } } } : {}),
      content: jsonContent(format.schema, examples),
    };
  }
  return responses;
}
