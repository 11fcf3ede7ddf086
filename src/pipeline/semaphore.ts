// A counting semaphore that refuses instead of queueing: for work whose cost per call is high
// (ffmpeg children, scrypt checks), so that a burst is answered 429 rather than piling up.
import { ApiError, CodedFailure, errorTable, retryAfter } from '../errors';

export class BusyError extends CodedFailure {
  constructor(readonly retryAfterSeconds: number) {
    super('too many concurrent operations');
  }

  coded(): ApiError {
    return new ApiError('overloaded', errorTable.overloaded.message, {}, retryAfter(this.retryAfterSeconds));
  }
}

export class Semaphore {
  private active = 0;

  constructor(readonly limit: number) {}

  /** Runs fn when a slot is free now; otherwise rejects with BusyError. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) throw new BusyError(1);
    this.active++;
    try {
      return await fn();
    } finally {
      this.active--;
    }
  }
}
