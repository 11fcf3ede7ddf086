// Every CATCOMFORT_MALLOC_TRIM_INTERVAL_MS the addon gives malloc's free pages back to the system
// (trimFreePages, on its pool): under a steady mixed load the main arena's heap kept 30-50 MiB of
// freed pages resident below blocks still in use (docs/performance-log.md "Memory that flattens").
// One trim at a time; a failed one is logged and the next interval tries again.
import { log } from '../log';
import { metrics } from '../ops/metrics';
import type { NativeAddon } from './addon';

export interface Trimmer {
  /** Stops the timer and waits for a trim under way. */
  stop(): Promise<void>;
}

export function trimFreePagesEvery(addon: Pick<NativeAddon, 'trimFreePages'>, intervalMs: number): Trimmer {
  if (intervalMs === 0) return { stop: async () => undefined };
  let running: Promise<void> | null = null;
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
  const timer = setInterval(() => {
    running ??= trimOnce().finally(() => (running = null));
  }, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
