// The one table of coded errors: kind -> (stable v2 code, HTTP status, default v2 message), and how
// they are written. Handlers throw ApiError; each interface registers its renderer with the router
// for its path prefix (Router.mount): the v2 ErrorResponse (spec 2.3, 7.1) for v2 and scans, v1's
// {"detail": ...} with v1's own texts. Protocol-level refusals (404, 405, 503, and the HTTP front's
// 400/408/413/414/429/431/501/505) are rendered by the renderer of the path they were for.
// Protocol-level 4xx without a code of their own share `http_error`, as 7.1 says.
import { requestIdFrom } from './request-id';

export const errorTable = {
  invalid_image: { code: 'invalid_image', status: 400, message: 'Image could not be decoded.' },
  unauthorized: { code: 'unauthorized', status: 401, message: 'Missing or invalid API key.' },
  model_not_found: { code: 'model_not_found', status: 404, message: 'Model not found.' },
  not_found: { code: 'not_found', status: 404, message: 'Not found.' },
  method_not_allowed: { code: 'method_not_allowed', status: 405, message: 'Method not allowed.' },
  idempotency_conflict: { code: 'idempotency_conflict', status: 422, message: 'This Idempotency-Key was already used with a different request.', scanOnly: true },
  bad_request: { code: 'http_error', status: 400, message: 'Malformed request.' },
  request_timeout: { code: 'http_error', status: 408, message: 'The request was not received in time.' },
  payload_too_large: { code: 'http_error', status: 413, message: 'Request body is too large.' },
  uri_too_long: { code: 'http_error', status: 414, message: 'Request target is too long.' },
  unsupported_media_type: { code: 'http_error', status: 415, message: 'Content-Type must be application/json.' },
  invalid_request: { code: 'invalid_request', status: 422, message: 'Request validation failed.' },
  overloaded: { code: 'overloaded', status: 429, message: 'The service is overloaded; retry later.' },
  auth_throttled: { code: 'too_many_failed_attempts', status: 429, message: 'Too many failed credential checks from this address; retry later.', scanOnly: true },
  header_too_large: { code: 'http_error', status: 431, message: 'Request header is too large.' },
  internal_error: { code: 'internal_error', status: 500, message: 'Internal server error.' },
  not_implemented: { code: 'not_implemented', status: 501, message: 'Request method is not implemented.' },
  unavailable: { code: 'unavailable', status: 503, message: 'The service is not ready or is shutting down.' },
  store_unavailable: { code: 'store_unavailable', status: 503, message: 'The scan store is unavailable; retry later.', scanOnly: true },
  http_version_not_supported: { code: 'http_version_not_supported', status: 505, message: 'Only HTTP/1.1 and HTTP/1.0 are supported.' },
} as const;

export type ErrorKind = keyof typeof errorTable;

/** The v2 message of a 413, wherever the body limit is found exceeded (the front or the service). */
export function bodyTooLargeMessage(limit: number): string {
  return `Request body exceeds the limit of ${limit} bytes.`;
}

export class ApiError extends Error {
  readonly status: number;
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

export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** `requestId`: the request's id (requestIdFrom of the client's X-Request-ID), for renderers that echo it. */
export type ErrorRenderer = (requestId: string, error: ApiError) => Answer;

/** The v2 ErrorResponse (spec 2.3): code, message and details, with the request id in body and header. */
export function errorResponse(requestId: string, error: ApiError): Answer {
  return {
    status: error.status,
    headers: { 'Content-Type': 'application/json', 'X-Request-ID': requestId, ...error.headers },
    body: JSON.stringify({ request_id: requestId, error: { code: error.code, message: error.message, details: error.details } }),
  };
}

/** `kind` rendered by `render`, with the request id from `rawRequestId` when acceptable. */
export function errorAnswer(
  render: ErrorRenderer,
  rawRequestId: string | undefined,
  kind: ErrorKind,
  options: { message?: string; headers?: Record<string, string> } = {},
): Answer {
  return render(requestIdFrom(rawRequestId), new ApiError(kind, options.message, {}, options.headers ?? {}));
}

export function notFoundAnswer(render: ErrorRenderer, rawRequestId: string | undefined): Answer {
  return errorAnswer(render, rawRequestId, 'not_found');
}

/** 405 with `Allow`; the v2 message names the method and the allowed ones. */
export function methodNotAllowedAnswer(render: ErrorRenderer, rawRequestId: string | undefined, method: string, allow: string[]): Answer {
  const list = allow.join(', ');
  return errorAnswer(render, rawRequestId, 'method_not_allowed', {
    message: `Method ${method} is not allowed here; use ${list}.`,
    headers: { Allow: list },
  });
}
