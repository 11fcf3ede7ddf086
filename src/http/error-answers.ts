// Protocol-level refusals (404, 405, 503, and the HTTP front's 400/408/413/414/431/501/505) in the
// format of the interface the path belongs to: the v2 ErrorResponse under /v2 and /scan, v1's
// {"detail": ...} elsewhere. One place, used by the router's dispatch and by the front.
import { STATUS_CODES } from 'node:http';
import { requestIdFrom } from './request-id';
import { ApiError, errorTable, type ErrorKind } from '../v2/errors';
import { errorResponse } from '../v2/respond';

export interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Paths answered with the v2 ErrorResponse (v2 itself and the scan interface); others get v1's {detail}. */
export function isV2(path: string): boolean {
  return path === '/v2' || path.startsWith('/v2/') || path === '/scan' || path.startsWith('/scan/');
}

/**
 * An error answer for `path`. v2: the table's code with `message` (or the table's message) and the
 * request id from `rawRequestId` when acceptable. v1: `{"detail": detail}`, by default the status text.
 */
export function errorAnswer(
  path: string,
  rawRequestId: string | undefined,
  kind: ErrorKind,
  options: { message?: string; detail?: string; headers?: Record<string, string> } = {},
): Answer {
  const headers = options.headers ?? {};
  if (isV2(path)) return errorResponse(requestIdFrom(rawRequestId), new ApiError(kind, options.message, {}, headers));
  const status = errorTable[kind].status;
  const detail = options.detail ?? STATUS_CODES[status] ?? 'Error';
  return { status, headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify({ detail }) };
}

export function notFoundAnswer(path: string, rawRequestId: string | undefined): Answer {
  return errorAnswer(path, rawRequestId, 'not_found');
}

/** 405 with `Allow`; the v2 message names the method and the allowed ones. */
export function methodNotAllowedAnswer(path: string, rawRequestId: string | undefined, method: string, allow: string[]): Answer {
  const list = allow.join(', ');
  return errorAnswer(path, rawRequestId, 'method_not_allowed', {
    message: `Method ${method} is not allowed here; use ${list}.`,
    headers: { Allow: list },
  });
}
