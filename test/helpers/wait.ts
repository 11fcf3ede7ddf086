// Bounded waits on observable state (a counter, a row, a log line) instead of fixed sleeps.

/**
 * Polls `check` every `intervalMs` until it returns something other than false, null or
 * undefined, and returns that. Fails after `timeoutMs`; an error thrown by `check` ends the wait.
 */
export async function waitFor<T>(
  what: string,
  check: () => T | false | null | undefined | Promise<T | false | null | undefined>,
  { timeoutMs = 120_000, intervalMs = 50 }: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== false && value !== null && value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`gave up after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
