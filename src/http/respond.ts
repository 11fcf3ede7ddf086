// Writing answers on an exchange: JSON bodies with the request id in body and header (v2, scans),
// and any failure through the coded-error mapping and the interface's renderer.
import { toApiError } from '../errors';
import type { ErrorRenderer } from './error-answers';
import type { Exchange } from './exchange';

export function sendJson(ex: Exchange, requestId: string, status: number, body: unknown, headers: Record<string, string> = {}, closeAfter = false): void {
  sendJsonText(ex, requestId, status, JSON.stringify(body), headers, closeAfter);
}

/** sendJson of a body already written as JSON text. */
export function sendJsonText(ex: Exchange, requestId: string, status: number, json: string, headers: Record<string, string> = {}, closeAfter = false): void {
  ex.send(status, { 'Content-Type': 'application/json', 'X-Request-ID': requestId, ...headers }, json, closeAfter);
}

/** Renders `error` for the client; nothing when the client is gone. */
export function sendError(ex: Exchange, render: ErrorRenderer, requestId: string, error: unknown, extraHeaders: Record<string, string> = {}): void {
  if (ex.aborted) return;
  const apiError = toApiError(error, { request_id: requestId, path: ex.path });
  if (apiError === null) return;
  const answer = render(requestId, apiError);
  ex.send(answer.status, { ...answer.headers, ...extraHeaders }, answer.body);
}
