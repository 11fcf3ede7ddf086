// Failures raised below the interfaces (the batcher, the pipeline, the store, body reading) that
// name their coded error themselves, as Triton's core returns errors that already carry their
// status: mapping.ts asks them, so this room needs to know none of the floors that raise them.
import type { ApiError } from './table';

export abstract class CodedFailure extends Error {
  /** The coded error to answer with, or null when there is no one left to answer (the client went away). */
  abstract coded(): ApiError | null;
}

/** The headers of a failure that tells the client when to retry (gRPC sends it as `retry-after` metadata). */
export function retryAfter(seconds: number): Record<string, string> {
  return { 'Retry-After': String(seconds) };
}
