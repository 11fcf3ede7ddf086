// Protocol-level refusals (404, 405, 503, and the HTTP front's 400/408/413/414/431/501/505) as
// coded errors, rendered in the format of the interface the path belongs to (Router.mount).
import { ApiError, type ErrorKind } from './errors';
import type { Answer, ErrorRenderer } from './error-render';
import { requestIdFrom } from './request-id';

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
