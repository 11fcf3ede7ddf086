// The protocol's REST error body, `{"error": message}`, with our code, details and request id inside.
import type { Answer, ApiError } from '../http/errors';

export function oipError(requestId: string, error: ApiError): Answer {
  return {
    status: error.status,
    headers: { 'Content-Type': 'application/json', 'X-Request-ID': requestId, ...error.headers },
    body: JSON.stringify({ error: error.message, code: error.code, details: error.details, request_id: requestId }),
  };
}
