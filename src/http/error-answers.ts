// Coded errors (src/errors/) as HTTP answers: each kind's HTTP status, the v2 ErrorResponse
// renderer (spec 2.3, 7.1) for v2 and scans, and the answers to protocol-level refusals (404, 405,
// 503, and the HTTP front's 400/408/413/414/429/431/501/505). Each interface registers its renderer
// with the router for its path prefix (Router.mount); refusals are rendered by the renderer of the
// path they were for.
import { ApiError, requestIdFrom, type ErrorKind } from '../errors';

/** The HTTP status of each kind: finer than the neutral status (a 400, 413 or 422 are all invalid input). */
export const HTTP_STATUS: Record<ErrorKind, number> = {
  invalid_image: 400,
  unauthorized: 401,
  model_not_found: 404,
  not_found: 404,
  method_not_allowed: 405,
  idempotency_conflict: 422,
  bad_request: 400,
  request_timeout: 408,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  invalid_request: 422,
  overloaded: 429,
  auth_throttled: 429,
  header_too_large: 431,
  internal_error: 500,
  not_implemented: 501,
  unavailable: 503,
  store_unavailable: 503,
  http_version_not_supported: 505,
  version_conflict: 409,
  pack_refused: 422,
};

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
    status: HTTP_STATUS[error.kind],
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
