// A dynamic micro-batcher in the manner of Triton's: a batch closes when it reaches
// maxBatchSize or when its oldest request has waited maxQueueDelayUs. The queue is bounded
// (QueueFullError past maxQueue), every request keeps its own deadline (DeadlineError when it
// expires or cannot be met), aborted requests leave the queue, and close() drains. Time and
// timers come from a BatcherClock (the real ones unless a test passes its own).
import { ApiError, CodedFailure, errorTable, retryAfter } from '../errors';
import type { Leaving } from '../http/exchange';

export class QueueFullError extends CodedFailure {
  constructor(readonly retryAfterSeconds: number) {
    super('queue is full');
  }

  coded(): ApiError {
    return new ApiError('overloaded', errorTable.overloaded.message, {}, retryAfter(this.retryAfterSeconds));
  }
}

export class DeadlineError extends CodedFailure {
  constructor(readonly retryAfterSeconds: number) {
    super('deadline exceeded');
  }

  coded(): ApiError {
    return new ApiError('overloaded', 'The request could not be processed before its deadline; retry later.', {}, retryAfter(this.retryAfterSeconds));
  }
}

export class ClosedError extends CodedFailure {
  constructor() {
    super('batcher is closed');
  }

  coded(): ApiError {
    return new ApiError('unavailable');
  }
}

/** The request's caller went away: no one is left to answer. */
export class AbortedError extends CodedFailure {
  constructor() {
    super('request aborted');
  }

  coded(): null {
    return null;
  }
}

/** The batching settings (CATCOMFORT_BATCH_*, CATCOMFORT_QUEUE_MAX; a pack's manifest may override them). */
export interface BatchingConfig {
  maxBatchSize: number;
  /** Below 1000 us the batch closes on the next turn of the event loop (setImmediate). */
  maxQueueDelayUs: number;
  maxQueue: number;
  /** Batches running at once; more lets decode of one overlap the model run of another. */
  maxInFlight: number;
}

/** The batching settings, and a listener. */
export interface BatcherOptions extends BatchingConfig {
  /** Hears each batch as it is dispatched: how long each of its requests waited in the queue (ms). */
  onBatch?: (queuedMs: number[]) => void;
}

/** Where a batcher reads the time and schedules its timers. */
export interface BatcherClock {
  /** Milliseconds; deadlines are on the same scale. */
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** Whether a timer keeps the process alive (Node's ref and unref); a clock without a process need not say. */
  hold?(handle: unknown, held: boolean): void;
}

/** performance.now() and the event loop's timers. */
const realClock: BatcherClock = {
  now: () => performance.now(),
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
  hold: (handle, held) => void (held ? (handle as NodeJS.Timeout).ref() : (handle as NodeJS.Timeout).unref()),
};

export interface SubmitOptions {
  /** Absolute time (clock.now() ms; performance.now() by default) after which the request is rejected. */
  deadline?: number;
  signal?: Leaving;
}

export interface BatcherStats {
  submitted: number;
  completed: number;
  batches: number;
  /** batchSizes[n] = number of batches of size n. */
  batchSizes: number[];
  queueTimeUsTotal: number;
  queueTimeUsMax: number;
  rejectedFull: number;
  expired: number;
  aborted: number;
  queued: number;
  inFlight: number;
}

interface Pending<I, R> {
  item: I;
  enqueuedAt: number;
  deadline: number;
  resolve: (value: R) => void;
  reject: (error: Error) => void;
  signal?: Leaving;
  onAbort?: () => void;
}

export class MicroBatcher<I, R> {
  private queue: Array<Pending<I, R>> = [];
  private inFlight = 0;
  private timer: unknown = null;
  /**
   * One timer for the queue's deadlines, set for the earliest (not one per request). It is kept when
   * the queue empties, no longer holding the process (`held`), so a steady flow of requests sets one
   * per deadline's length, not one each.
   */
  private expiry: { handle: unknown; at: number; held: boolean } | null = null;
  private immediate: NodeJS.Immediate | null = null;
  private closed = false;
  private drained: Array<() => void> = [];
  /** Moving average of batch run time (ms), used to refuse requests that cannot make their deadline. */
  private batchMsAverage = 0;
  private readonly counters: BatcherStats;

  private limits: BatcherOptions;

  constructor(
    options: BatcherOptions,
    private readonly run: (items: I[]) => Promise<R[]>,
    private readonly clock: BatcherClock = realClock,
  ) {
    this.limits = { ...options };
    this.counters = {
      submitted: 0,
      completed: 0,
      batches: 0,
      batchSizes: new Array<number>(options.maxBatchSize + 1).fill(0),
      queueTimeUsTotal: 0,
      queueTimeUsMax: 0,
      rejectedFull: 0,
      expired: 0,
      aborted: 0,
      queued: 0,
      inFlight: 0,
    };
  }

  get options(): Readonly<BatcherOptions> {
    return this.limits;
  }

  /** A new largest batch (warm-up fits it to the session sizes); the batches dispatched after take it. */
  setMaxBatchSize(size: number): void {
    this.limits = { ...this.limits, maxBatchSize: size };
    while (this.counters.batchSizes.length <= size) this.counters.batchSizes.push(0);
  }

  stats(): BatcherStats {
    return { ...this.counters, batchSizes: [...this.counters.batchSizes], ...this.load() };
  }

  /** Requests queued and batches running now: stats()'s gauges without copying the counters, for per-request checks. */
  load(): { queued: number; inFlight: number } {
    return { queued: this.queue.length, inFlight: this.inFlight };
  }

  /** Seconds a rejected client should wait: about the time to work off the current queue. */
  private retryAfter(): number {
    const batchesAhead = Math.ceil(this.queue.length / this.options.maxBatchSize) + this.inFlight;
    return Math.max(1, Math.ceil((batchesAhead * this.batchMsAverage) / 1000));
  }

  submit(item: I, options: SubmitOptions = {}): Promise<R> {
    if (this.closed) return Promise.reject(new ClosedError());
    if (options.signal?.aborted) return Promise.reject(new AbortedError());
    if (this.queue.length >= this.options.maxQueue) {
      this.counters.rejectedFull++;
      return Promise.reject(new QueueFullError(this.retryAfter()));
    }
    const now = this.clock.now();
    const deadline = options.deadline ?? Infinity;
    const batchesAhead = Math.floor(this.queue.length / this.options.maxBatchSize) + (this.inFlight >= this.options.maxInFlight ? 1 : 0);
    if (now + (batchesAhead + 1) * this.batchMsAverage > deadline) {
      this.counters.expired++;
      return Promise.reject(new DeadlineError(this.retryAfter()));
    }
    this.counters.submitted++;
    return new Promise<R>((resolve, reject) => {
      const pending: Pending<I, R> = { item, enqueuedAt: now, deadline, resolve, reject };
      this.watchDeadline(deadline, now);
      if (options.signal) {
        pending.signal = options.signal;
        pending.onAbort = () => this.drop(pending, new AbortedError(), 'aborted');
        options.signal.addEventListener('abort', pending.onAbort, { once: true });
      }
      this.queue.push(pending);
      this.schedule();
    });
  }

  /** Stops accepting work and resolves once everything queued or running has finished. */
  close(): Promise<void> {
    this.closed = true;
    this.schedule();
    if (this.queue.length === 0 && this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.drained.push(resolve));
  }

  private drop(pending: Pending<I, R>, error: Error, counter: 'expired' | 'aborted'): void {
    const index = this.queue.indexOf(pending);
    if (index < 0) return; // already running: its result is simply discarded by the caller
    this.queue.splice(index, 1);
    this.unholdWhenEmpty();
    this.counters[counter]++;
    this.release(pending);
    pending.reject(error);
    this.checkDrained();
  }

  /** The expiry timer fires by `deadline` (clock time `now`), holding the process while requests wait. */
  private watchDeadline(deadline: number, now: number): void {
    if (!Number.isFinite(deadline)) return;
    if (this.expiry && this.expiry.at <= deadline) return this.holdExpiry(true);
    if (this.expiry) this.clock.clearTimeout(this.expiry.handle);
    this.expiry = { at: deadline, handle: this.clock.setTimeout(() => this.expire(deadline), deadline - now), held: true };
  }

  private holdExpiry(held: boolean): void {
    if (!this.expiry || this.expiry.held === held) return;
    this.expiry.held = held;
    this.clock.hold?.(this.expiry.handle, held);
  }

  /** The timer set for `due` fired: every request due by then expires, and the timer is set for the next. */
  private expire(due: number): void {
    this.expiry = null;
    let next = Infinity;
    for (const pending of [...this.queue]) {
      if (pending.deadline <= due) this.drop(pending, new DeadlineError(this.retryAfter()), 'expired');
      else next = Math.min(next, pending.deadline);
    }
    this.watchDeadline(next, this.clock.now());
  }

  /** Nothing queued: the expiry timer no longer holds the process. */
  private unholdWhenEmpty(): void {
    if (this.queue.length === 0) this.holdExpiry(false);
  }

  private release(pending: Pending<I, R>): void {
    if (pending.signal && pending.onAbort) pending.signal.removeEventListener('abort', pending.onAbort);
  }

  private schedule(): void {
    if (this.queue.length === 0 || this.inFlight >= this.options.maxInFlight) return;
    if (this.queue.length >= this.options.maxBatchSize || this.closed) {
      this.dispatch();
      return;
    }
    if (this.timer !== null || this.immediate) return;
    const waited = (this.clock.now() - this.queue[0]!.enqueuedAt) * 1000;
    const remainingUs = this.options.maxQueueDelayUs - waited;
    if (remainingUs < 1000) {
      this.immediate = setImmediate(() => {
        this.immediate = null;
        this.dispatch();
      });
    } else {
      this.timer = this.clock.setTimeout(() => {
        this.timer = null;
        this.dispatch();
      }, remainingUs / 1000);
    }
  }

  private dispatch(): void {
    if (this.timer !== null) this.clock.clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.timer = null;
    this.immediate = null;
    if (this.queue.length === 0 || this.inFlight >= this.options.maxInFlight) return;
    const batch = this.queue.splice(0, this.options.maxBatchSize);
    this.unholdWhenEmpty();
    const started = this.clock.now();
    for (const pending of batch) {
      this.release(pending);
      const queuedUs = (started - pending.enqueuedAt) * 1000;
      this.counters.queueTimeUsTotal += queuedUs;
      this.counters.queueTimeUsMax = Math.max(this.counters.queueTimeUsMax, queuedUs);
    }
    this.options.onBatch?.(batch.map((p) => started - p.enqueuedAt));
    this.counters.batches++;
    this.counters.batchSizes[batch.length]!++;
    this.inFlight++;
    let settled: Promise<R[]>;
    try {
      settled = this.run(batch.map((p) => p.item));
    } catch (error) {
      settled = Promise.reject(error);
    }
    settled
      .then(
        (results) => {
          if (!Array.isArray(results) || results.length !== batch.length) {
            const error = new Error(`batch run returned ${Array.isArray(results) ? results.length : typeof results} results for ${batch.length} items`);
            for (const pending of batch) pending.reject(error);
            return;
          }
          batch.forEach((pending, i) => pending.resolve(results[i]!));
        },
        (error: Error) => {
          for (const pending of batch) pending.reject(error);
        },
      )
      .finally(() => {
        const ms = this.clock.now() - started;
        this.batchMsAverage = this.batchMsAverage === 0 ? ms : this.batchMsAverage * 0.8 + ms * 0.2;
        this.counters.completed += batch.length;
        this.inFlight--;
        this.schedule();
        this.checkDrained();
      });
    this.schedule();
  }

  private checkDrained(): void {
    if (this.closed && this.queue.length === 0 && this.inFlight === 0) {
      for (const resolve of this.drained.splice(0)) resolve();
    }
  }
}
