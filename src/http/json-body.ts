// A JSON object request body (v2 and scans): a missing, malformed or non-object body is a 422 on
// `body`, in pydantic's wording.
import { validationError } from './errors';

/** Parses a JSON object body; a missing, malformed or non-object body is a 422 on `body`. */
export function parseJsonObject(body: Buffer): Record<string, unknown> {
  if (body.length === 0) throw validationError([{ field: 'body', message: 'Field required' }]);
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw validationError([{ field: 'body', message: 'JSON decode error' }]);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw validationError([
      { field: 'body', message: 'Input should be a valid dictionary or object to extract fields from' },
    ]);
  }
  return value as Record<string, unknown>;
}
