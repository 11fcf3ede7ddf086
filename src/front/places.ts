// Places for requests in the service, shared by all client connections of one front: a request holds
// one from the moment it is handed over (its head) to its answer, and waits in a bounded FIFO when none
// is free. What the queue cannot take, or what waits past the limit, the caller refuses with 429. So a
// burst of clients cannot put more requests into the service at once than CATCOMFORT_UPSTREAM_CONNECTIONS
// (shared among the front's threads), nor make it hold more than CATCOMFORT_UPSTREAM_QUEUE waiting.

export interface PlaceLimits {
  /** Requests in the service at once, at most. */
  places: number;
  /** Requests waiting for a place at most; more are refused. */
  queue: number;
  /** Longest a request waits for a place before it is refused. */
  waitMs: number;
}

/** Reported as the catcomfort_front_upstream gauge: places held (`open`), always 0 `idle`, and requests `waiting`. */
export interface PlaceCounts {
  open: number;
  idle: number;
  waiting: number;
}

interface Waiter {
  grant(): void;
  timer: NodeJS.Timeout;
}

export class Places {
  private held = 0;
  private readonly waiting = new Set<Waiter>();

  constructor(private readonly limits: PlaceLimits) {}

  get counts(): PlaceCounts {
    return { open: this.held, idle: 0, waiting: this.waiting.size };
  }

  /**
   * Calls `grant` now, or once a place is free; `expire` instead when none came within the wait limit.
   * Returns a function that leaves the queue, or null when the queue is full (nothing is called).
   */
  acquire(grant: () => void, expire: () => void): (() => void) | null {
    if (this.held < this.limits.places && this.waiting.size === 0) {
      this.held++;
      grant();
      return () => undefined;
    }
    if (this.waiting.size >= this.limits.queue) return null;
    const waiter: Waiter = {
      grant,
      timer: setTimeout(() => {
        this.waiting.delete(waiter);
        expire();
      }, this.limits.waitMs),
    };
    this.waiting.add(waiter);
    return () => {
      clearTimeout(waiter.timer);
      this.waiting.delete(waiter);
    };
  }

  /** A request's place is free again: the longest waiter takes it. */
  give(): void {
    for (const waiter of this.waiting) {
      this.waiting.delete(waiter);
      clearTimeout(waiter.timer);
      return waiter.grant();
    }
    this.held--;
  }
}
