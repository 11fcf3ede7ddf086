// The one mapping from failures below the HTTP layer (packs, pipeline, batcher, body reading) to coded
// errors. Interfaces render the result in their own format.
import { log } from '../log';
import { ImageError, PackNotLoadedError } from '../pipeline/analysis';
import { AbortedError, ClosedError, DeadlineError, QueueFullError } from '../pipeline/batcher';
import { BusyError } from '../pipeline/semaphore';
import { StoreUnavailableError } from '../store/types';
import { ApiError, bodyTooLargeMessage, errorTable } from './errors';
import { BadContentLengthError, BodyTooLargeError, ClientGoneError } from './exchange';

const retryAfter = (seconds: number) => ({ 'Retry-After': String(seconds) });

/** Seconds a client is told to wait after a store fault: about how long a database restart takes. */
export const STORE_RETRY_AFTER_S = 5;

function packNotLoaded(error: PackNotLoadedError): ApiError {
  if (error.version === undefined) return new ApiError('model_not_found', `Model '${error.id}' not found.`, { model_id: error.id });
  const details = { model_id: error.id, version: error.version, ...(error.role ? { role: error.role } : {}) };
  const message = error.role
    ? `Version '${error.version}' of model '${error.id}' is loaded as ${error.role}; only the serving version and a canary${error.shadowAnswers ? ' (and, named by pack_version, a shadow)' : ''} answer requests.`
    : `Version '${error.version}' of model '${error.id}' not found.`;
  return new ApiError('model_not_found', message, details);
}

/**
 * The coded error for `error`, or null when there is no one left to answer (the client went away).
 * Anything unknown is logged and becomes `internal_error`.
 */
export function toApiError(error: unknown, context: Record<string, unknown> = {}): ApiError | null {
  if (error instanceof ApiError) return error;
  if (error instanceof ClientGoneError || error instanceof AbortedError) return null;
  if (error instanceof PackNotLoadedError) return packNotLoaded(error);
  if (error instanceof ImageError) return new ApiError('invalid_image', error.message);
  if (error instanceof BodyTooLargeError) {
    return new ApiError('payload_too_large', bodyTooLargeMessage(error.limit), {}, {}, { limit: error.limit });
  }
  if (error instanceof BadContentLengthError) return new ApiError('bad_request', 'Invalid Content-Length header.', {}, {}, { header: 'content-length' });
  if (error instanceof QueueFullError || error instanceof BusyError) {
    return new ApiError('overloaded', errorTable.overloaded.message, {}, retryAfter(error.retryAfterSeconds));
  }
  if (error instanceof DeadlineError) {
    return new ApiError('overloaded', 'The request could not be processed before its deadline; retry later.', {}, retryAfter(error.retryAfterSeconds));
  }
  if (error instanceof ClosedError) return new ApiError('unavailable');
  if (error instanceof StoreUnavailableError) return new ApiError('store_unavailable', undefined, {}, retryAfter(STORE_RETRY_AFTER_S));
  log.error('unhandled error', { ...context, error: (error as Error)?.stack ?? String(error) });
  return new ApiError('internal_error');
}
