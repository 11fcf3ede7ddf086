// The one table of coded errors, shared by every interface (HTTP, gRPC, the scan workers): each kind
// has its stable code, a transport-neutral status and a default message. As in Triton, the status
// says what kind of failure it is and each transport maps it: HTTP to its status codes where it
// renders answers (src/http/error-answers.ts), gRPC to its status codes (src/oip/grpc/status.ts).
// Protocol-level 4xx without a code of their own share `http_error`, as spec 7.1 says. `only`: the
// one interface that answers a kind (the v2 documents list the others).

/** What kind of failure, whatever the transport (the canonical codes gRPC and Triton also use). */
export type Status =
  | 'invalid_argument'
  | 'unauthenticated'
  | 'not_found'
  | 'unimplemented'
  | 'already_exists'
  | 'failed_precondition'
  | 'deadline_exceeded'
  | 'resource_exhausted'
  | 'unavailable'
  | 'internal';

export const errorTable = {
  invalid_image: { code: 'invalid_image', status: 'invalid_argument', message: 'Image could not be decoded.' },
  unauthorized: { code: 'unauthorized', status: 'unauthenticated', message: 'Missing or invalid API key.' },
  model_not_found: { code: 'model_not_found', status: 'not_found', message: 'Model not found.' },
  not_found: { code: 'not_found', status: 'not_found', message: 'Not found.' },
  method_not_allowed: { code: 'method_not_allowed', status: 'unimplemented', message: 'Method not allowed.' },
  idempotency_conflict: { code: 'idempotency_conflict', status: 'already_exists', message: 'This Idempotency-Key was already used with a different request.', only: 'scan' },
  bad_request: { code: 'http_error', status: 'invalid_argument', message: 'Malformed request.' },
  request_timeout: { code: 'http_error', status: 'deadline_exceeded', message: 'The request was not received in time.' },
  payload_too_large: { code: 'http_error', status: 'resource_exhausted', message: 'Request body is too large.' },
  uri_too_long: { code: 'http_error', status: 'invalid_argument', message: 'Request target is too long.' },
  unsupported_media_type: { code: 'http_error', status: 'invalid_argument', message: 'Content-Type must be application/json.' },
  invalid_request: { code: 'invalid_request', status: 'invalid_argument', message: 'Request validation failed.' },
  // Retry later: HTTP's 429 with Retry-After, gRPC's UNAVAILABLE.
  overloaded: { code: 'overloaded', status: 'unavailable', message: 'The service is overloaded; retry later.' },
  auth_throttled: { code: 'too_many_failed_attempts', status: 'resource_exhausted', message: 'Too many failed credential checks from this address; retry later.', only: 'scan' },
  header_too_large: { code: 'http_error', status: 'resource_exhausted', message: 'Request header is too large.' },
  internal_error: { code: 'internal_error', status: 'internal', message: 'Internal server error.' },
  not_implemented: { code: 'not_implemented', status: 'unimplemented', message: 'Request method is not implemented.' },
  unavailable: { code: 'unavailable', status: 'unavailable', message: 'The service is not ready or is shutting down.' },
  store_unavailable: { code: 'store_unavailable', status: 'unavailable', message: 'The scan store is unavailable; retry later.', only: 'scan' },
  http_version_not_supported: { code: 'http_version_not_supported', status: 'unimplemented', message: 'Only HTTP/1.1 and HTTP/1.0 are supported.' },
  // The admin listener's refusals of a pack action (src/packs/control/admin-server.ts).
  version_conflict: { code: 'conflict', status: 'failed_precondition', message: 'The pack versions do not allow this action.', only: 'admin' },
  pack_refused: { code: 'pack_refused', status: 'invalid_argument', message: 'The pack was refused.', only: 'admin' },
} as const satisfies Record<string, { code: string; status: Status; message: string; only?: 'scan' | 'admin' }>;

export type ErrorKind = keyof typeof errorTable;

/** The v2 message of a 413, wherever the body limit is found exceeded (the HTTP front, the service, gRPC). */
export function bodyTooLargeMessage(limit: number): string {
  return `Request body exceeds the limit of ${limit} bytes.`;
}

/** A coded error: handlers throw it, and every failure becomes one (mapping.ts) before an interface renders it. */
export class ApiError extends Error {
  readonly status: Status;
  readonly code: string;
  constructor(
    readonly kind: ErrorKind,
    message: string = errorTable[kind].message,
    readonly details: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
    /** Values an interface's own wording may use (never rendered as such), e.g. the body limit. */
    readonly params: Record<string, string | number> = {},
  ) {
    super(message);
    this.status = errorTable[kind].status;
    this.code = errorTable[kind].code;
  }
}

export interface FieldError {
  field: string;
  message: string;
}

export function validationError(errors: FieldError[]): ApiError {
  return new ApiError('invalid_request', errorTable.invalid_request.message, { errors });
}
