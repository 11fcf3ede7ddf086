// v1's error format (spec 7.2): `{"detail": ...}` with v1's own texts, and a plain-text 500.
import type { ApiError, ErrorKind } from '../errors';
import { HTTP_STATUS, type ErrorRenderer } from '../http/error-answers';

/** v1's text of a 413. */
export function v1BodyTooLargeMessage(limit: number): string {
  return `Request body exceeds ${limit} bytes`;
}

const DETAIL: Partial<Record<ErrorKind, (e: ApiError) => string>> = {
  unauthorized: () => 'Invalid or missing API key',
  not_found: () => 'Not Found',
  method_not_allowed: () => 'Method Not Allowed',
  payload_too_large: (e) => (e.params.limit !== undefined ? v1BodyTooLargeMessage(Number(e.params.limit)) : e.message),
  bad_request: (e) => (e.params.header === 'content-length' ? 'Invalid Content-Length header' : e.message),
  overloaded: () => 'Too many requests; retry later',
  unavailable: () => 'Service Unavailable',
};

export const renderV1Error: ErrorRenderer = (_requestId, e) => {
  if (e.kind === 'internal_error') return { status: 500, headers: { 'Content-Type': 'text/plain; charset=utf-8', ...e.headers }, body: 'Internal Server Error' };
  const detail = DETAIL[e.kind]?.(e) ?? e.message;
  return { status: HTTP_STATUS[e.kind], headers: { 'Content-Type': 'application/json', ...e.headers }, body: JSON.stringify({ detail }) };
};
