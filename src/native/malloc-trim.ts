// Every CATCOMFORT_MALLOC_TRIM_INTERVAL_MS (off by default) the addon gives malloc's free pages back
// to the system (trimFreePages, on its pool): under a steady mixed load the main arena's heap kept
// 30-50 MiB of freed pages resident below blocks still in use; trims lower the mean but make RSS
// swing between them (docs/performance-log.md "Memory that flattens").
// A trim locks each arena while it walks it (8 ms in all on the quiet 2-core VM, 25-50 ms beside
// other work), so it waits for a moment with no analysis running, looking again every BUSY_RETRY_MS;
// under saturation none runs.
// One trim at a time; a failed one is logged and the next interval tries again.
import { log } from '../log';
import { metrics } from '../ops/metrics';
import type { NativeAddon } from './addon';

const BUSY_RETRY_MS = 250;

export interface Trimmer {
  /** Stops the timer and waits for a trim under way. */
  stop(): Promise<void>;
}

/** Trims at most once per `intervalMs`, at a moment `busy()` is false (no analysis running). */
export function trimFreePagesEvery(addon: Pick<NativeAddon, 'trimFreePages'>, intervalMs: number, busy: () => boolean): Trimmer {
  if (intervalMs === 0) return { stop: async () => undefined };
  let running: Promise<void> | null = null;
  let timer: NodeJS.Timeout;
  let stopped = false;
  const trimOnce = async () => {
    try {
      const outcome = await addon.trimFreePages();
      metrics.mallocTrims.inc();
      metrics.mallocTrimSeconds.inc(outcome.ms / 1000);
      metrics.mallocTrimReleasedBytes.inc(Math.max(0, outcome.residentBeforeBytes - outcome.residentAfterBytes));
    } catch (error) {
      log.warn('giving free memory back failed', { error: (error as Error).message });
    }
  };
  const wait = (ms: number) => {
    timer = setTimeout(tick, ms);
    timer.unref();
  };
  const tick = () => {
    if (busy()) return wait(BUSY_RETRY_MS);
    running = trimOnce().finally(() => {
      running = null;
      if (!stopped) wait(intervalMs);
    });
  };
  wait(intervalMs);
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
