// Buffers the main thread allocated for what it read (the HTTP/2 frames of gRPC calls, bodies it
// copied) are freed only when V8 collects them, and V8 does a full collection for them once external
// memory has grown by 64 MiB: under a mixed load that was every 2-3 minutes, and RSS rose and fell
// with it by 40-70 MiB (docs/operations.md "Memory"). So once a second the main thread looks at its
// external memory, and when it has grown by STEP_BYTES since its low point, collects then (a young
// collection does not free them): smaller steps, each marking the whole heap. At most one per MIN_GAP_MS,
// so under heavy load V8's own collections take over. The front's threads (front-thread-main.ts) do the
// same for their own heaps, which held 6-33 MiB of such buffers between V8's collections. Steps of
// 16 MiB still left 6-25 MiB of them on the main thread from minute to minute over two hours.
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export const STEP_BYTES = 4 * 1024 * 1024;
export const MIN_GAP_MS = 10_000;
const LOOK_MS = 1000;

/** Decides, at each look, whether to collect: external memory grown by STEP_BYTES since its low point, MIN_GAP_MS after the last. */
export class ExternalCollections {
  private low: number;
  private last = -Infinity;
  private count = 0;
  private spentMs = 0;

  constructor(
    private readonly external: () => number,
    private readonly collect: () => void,
  ) {
    this.low = external();
  }

  /** One look at time `now` (ms); true when it collected. */
  look(now: number): boolean {
    const bytes = this.external();
    this.low = Math.min(this.low, bytes);
    if (bytes - this.low < STEP_BYTES || now - this.last < MIN_GAP_MS) return false;
    const start = performance.now();
    this.collect();
    this.spentMs += performance.now() - start;
    this.count++;
    this.last = now;
    this.low = this.external();
    return true;
  }

  /** Collections run so far. */
  collections(): number {
    return this.count;
  }

  /** Seconds spent in them so far. */
  seconds(): number {
    return this.spentMs / 1000;
  }
}

let running: ExternalCollections | null = null;

/** Starts the looks on this thread (the main thread, or a front thread), once per thread. */
export function collectExternalInSteps(): void {
  if (running) return;
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void; // a context of its own: the global object gets no `gc`
  const collections = new ExternalCollections(() => getHeapStatistics().external_memory, gc);
  setInterval(() => collections.look(performance.now()), LOOK_MS).unref();
  running = collections;
}

/** Collections the looks have run (0 before they start). */
export function externalCollections(): number {
  return running?.collections() ?? 0;
}

/** Seconds this thread spent in them (0 before they start). */
export function externalCollectionSeconds(): number {
  return running?.seconds() ?? 0;
}
