// The protocol's REST error body, `{"error": message}`, with our code, details and request id inside.
import type { ApiError } from '../errors';
import { HTTP_STATUS, type Answer } from '../http/error-answers';

export function oipError(requestId: string, error: ApiError): Answer {
  return {
    status: HTTP_STATUS[error.kind],
    headers: { 'Content-Type': 'application/json', 'X-Request-ID': requestId, ...error.headers },
    body: JSON.stringify({ error: error.message, code: error.code, details: error.details, request_id: requestId }),
  };
}
