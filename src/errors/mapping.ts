// The one mapping from any failure to a coded error, for every interface (HTTP answers, gRPC
// statuses, the CLI's lines). Coded errors pass as they are; failures from the floors below
// (batcher, pipeline, store, body reading) name theirs (failure.ts); anything else is a bug.
import { log } from '../log';
import { CodedFailure } from './failure';
import { ApiError } from './table';

/**
 * The coded error for `error`, or null when there is no one left to answer (the client went away).
 * Anything unknown is logged and becomes `internal_error`.
 */
export function toApiError(error: unknown, context: Record<string, unknown> = {}): ApiError | null {
  if (error instanceof ApiError) return error;
  if (error instanceof CodedFailure) return error.coded();
  log.error('unhandled error', { ...context, error: (error as Error)?.stack ?? String(error) });
  return new ApiError('internal_error');
}
