// How an interface writes an ApiError. Each interface registers its renderer with the router for
// its path prefix (Router.mount); 404/405, refusals of the HTTP front, 503s and handler failures
// are rendered by the renderer of the path they were for.
import type { ApiError } from './errors';

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
