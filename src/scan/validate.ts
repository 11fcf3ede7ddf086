// Validation of scan submissions and listing queries, with v2's error conventions.
import { validationError, type FieldError } from '../errors';
import { checkUrl, FetchRefusedError, IMAGE_WORDS, type UrlWords } from './fetch';
import { METADATA_LIMITS } from './schemas';
import { CALLBACK_WORDS } from './webhooks/callback-url';

export interface Submission {
  image: string | null;
  imageUrl: string | null;
  /** Syntax checked; its scheme and addresses are checked by checkCallbackUrl. */
  callbackUrl: string | null;
  metadata: Record<string, unknown>;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Depth and key-count limits of metadata; returns a message or null. `depth` counts containers
 * (objects and arrays): the metadata object itself is level 1, `{a: {b: {c: {d: 1}}}}` has 4.
 */
function metadataProblem(value: unknown, depth: number): string | null {
  const container = Array.isArray(value) || isObject(value);
  if (container && depth > METADATA_LIMITS.maxDepth) return `Metadata may nest at most ${METADATA_LIMITS.maxDepth} levels`;
  if (Array.isArray(value)) {
    if (value.length > METADATA_LIMITS.maxKeys) return `Metadata arrays may hold at most ${METADATA_LIMITS.maxKeys} items`;
    for (const item of value) {
      const problem = metadataProblem(item, depth + 1);
      if (problem) return problem;
    }
  } else if (isObject(value)) {
    if (Object.keys(value).length > METADATA_LIMITS.maxKeys) return `Metadata objects may hold at most ${METADATA_LIMITS.maxKeys} keys`;
    for (const item of Object.values(value)) {
      const problem = metadataProblem(item, depth + 1);
      if (problem) return problem;
    }
  }
  return null;
}

/** The first letter of a message up. */
export const sentence = (text: string): string => text.charAt(0).toUpperCase() + text.slice(1);

/** A URL field: a string whose syntax, scheme and credentials checkUrl accepts. */
function checkUrlField(errors: FieldError[], field: string, value: unknown, words: UrlWords): void {
  if (value === undefined || value === null) return;
  if (typeof value !== 'string') {
    errors.push({ field, message: 'Input should be a valid string' });
    return;
  }
  try {
    checkUrl(value, words);
  } catch (error) {
    errors.push({ field, message: sentence(error instanceof FetchRefusedError ? error.message : `the ${words.url} is invalid`) });
  }
}

export function validateSubmission(body: Record<string, unknown>): Submission {
  const errors: FieldError[] = [];
  const { image, imageUrl, callbackUrl, metadata } = body;
  const present = (v: unknown) => v !== undefined && v !== null;
  if (present(image) && typeof image !== 'string') errors.push({ field: 'image', message: 'Input should be a valid string' });
  else if (image === '') errors.push({ field: 'image', message: 'String should have at least 1 character' });
  // Scheme, credentials and syntax are refused now; an image URL's addresses when fetching.
  checkUrlField(errors, 'imageUrl', imageUrl, IMAGE_WORDS);
  checkUrlField(errors, 'callbackUrl', callbackUrl, CALLBACK_WORDS);
  if (!present(image) && !present(imageUrl)) errors.push({ field: 'body', message: 'Exactly one of image and imageUrl is required' });
  if (present(image) && present(imageUrl)) errors.push({ field: 'body', message: 'Send either image or imageUrl, not both' });
  if (present(metadata)) {
    if (!isObject(metadata)) errors.push({ field: 'metadata', message: 'Input should be a valid dictionary' });
    else {
      // Shape first: it stops at the depth limit, so the size check never serialises a deep value.
      const problem =
        metadataProblem(metadata, 1) ??
        (Buffer.byteLength(JSON.stringify(metadata)) > METADATA_LIMITS.maxBytes
          ? `Metadata may be at most ${METADATA_LIMITS.maxBytes} bytes as JSON`
          : null);
      if (problem) errors.push({ field: 'metadata', message: problem });
      for (const key of ['petId', 'customerId']) {
        if (present(metadata[key]) && typeof metadata[key] !== 'string') {
          errors.push({ field: `metadata.${key}`, message: 'Input should be a valid string' });
        }
      }
    }
  }
  if (errors.length > 0) throw validationError(errors);
  return {
    image: typeof image === 'string' ? image : null,
    imageUrl: typeof imageUrl === 'string' ? imageUrl : null,
    callbackUrl: typeof callbackUrl === 'string' ? callbackUrl : null,
    metadata: isObject(metadata) ? metadata : {},
  };
}

export interface ListParams {
  petId?: string;
  customerId?: string;
  limit: number;
  cursor?: string;
}

export function validateListQuery(query: URLSearchParams): ListParams {
  const errors: FieldError[] = [];
  const params: ListParams = { limit: 20 };
  const limit = query.get('limit');
  if (limit !== null) {
    if (!/^\d+$/.test(limit) || Number(limit) < 1 || Number(limit) > 100) {
      errors.push({ field: 'limit', message: 'Input should be an integer from 1 to 100' });
    } else params.limit = Number(limit);
  }
  for (const key of ['petId', 'customerId', 'cursor'] as const) {
    const value = query.get(key);
    if (value !== null) {
      if (value.length === 0 || value.length > 512) errors.push({ field: key, message: 'String should have 1 to 512 characters' });
      else params[key] = value;
    }
  }
  if (errors.length > 0) throw validationError(errors);
  return params;
}
