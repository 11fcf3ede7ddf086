// v2 response writing: JSON bodies with the request id in body and header, and the
// ErrorResponse rendering of every failure (spec 2.3).
import type { Exchange } from '../http/exchange';
import { BadContentLengthError, BodyTooLargeError, ClientGoneError } from '../http/exchange';
import { log } from '../log';
import { AbortedError } from '../pipeline/batcher';
import { ApiError, errorTable } from './errors';
import { BusyError } from '../pipeline/semaphore';

export function sendJson(ex: Exchange, requestId: string, status: number, body: unknown, headers: Record<string, string> = {}, closeAfter = false): void {
  ex.send(status, { 'Content-Type': 'application/json', 'X-Request-ID': requestId, ...headers }, JSON.stringify(body), closeAfter);
}

export function sendError(ex: Exchange, requestId: string, error: unknown, closeAfter = false): void {
  if (error instanceof ClientGoneError || error instanceof AbortedError) return;
  let apiError: ApiError;
  if (error instanceof ApiError) apiError = error;
  else if (error instanceof BodyTooLargeError) {
    apiError = new ApiError('payload_too_large', `Request body exceeds the limit of ${error.limit} bytes.`);
  } else if (error instanceof BusyError) {
    apiError = new ApiError('overloaded', errorTable.overloaded.message, {}, { 'Retry-After': String(error.retryAfterSeconds) });
  } else if (error instanceof BadContentLengthError) {
    apiError = new ApiError('bad_request', 'Invalid Content-Length header.');
  } else {
    log.error('unhandled error', { request_id: requestId, error: (error as Error)?.stack ?? String(error) });
    apiError = new ApiError('internal_error');
  }
  const answer = errorResponse(requestId, apiError);
  ex.send(answer.status, answer.headers, answer.body, closeAfter);
}

/** An ErrorResponse as status, headers and JSON body; also used by the HTTP front for its own refusals. */
export function errorResponse(requestId: string, error: ApiError): { status: number; headers: Record<string, string>; body: string } {
  return {
    status: error.status,
    headers: { 'Content-Type': 'application/json', 'X-Request-ID': requestId, ...error.headers },
    body: JSON.stringify({ request_id: requestId, error: { code: error.code, message: error.message, details: error.details } }),
  };
}
