// Waits between retries of a store call that failed: BACKOFF.firstMs doubling up to BACKOFF.maxMs,
// each drawn in [half, whole] (jitter, so instances that failed together do not retry together).
export const BACKOFF = { firstMs: 100, maxMs: 5000 } as const;

export function backoffMs(failures: number, random: () => number = Math.random): number {
  const ceiling = Math.min(BACKOFF.maxMs, BACKOFF.firstMs * 2 ** Math.min(failures - 1, 16));
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}
