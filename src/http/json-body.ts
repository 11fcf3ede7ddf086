// A JSON object request body (v2 and scans): a missing, malformed or non-object body is a 422 on
// `body`, in pydantic's wording.
import { validationError, type ApiError } from '../errors';
import { splitImage } from './json-image';

/** The 422 of a body that is not JSON. */
export function jsonDecodeError(): ApiError {
  return validationError([{ field: 'body', message: 'JSON decode error' }]);
}

/** Parses a JSON object body; a missing, malformed or non-object body is a 422 on `body`. */
export function parseJsonObject(body: Buffer): Record<string, unknown> {
  if (body.length === 0) throw validationError([{ field: 'body', message: 'Field required' }]);
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw jsonDecodeError();
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw validationError([
      { field: 'body', message: 'Input should be a valid dictionary or object to extract fields from' },
    ]);
  }
  return value as Record<string, unknown>;
}

/** parseJsonObject, with the member `key` as a Buffer view of the body's bytes when it is a plain string (json-image.ts). */
export function parseJsonObjectWithImage(body: Buffer, key: string): Record<string, unknown> {
  return splitImage(body, key) ?? parseJsonObject(body);
}
