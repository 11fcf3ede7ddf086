// A closed loop of clients for `catcomfort gpu-check`: `clients` callers, each sending its next
// request as soon as the last one is answered, for `seconds`; counts what succeeded and how fast.
export interface LoopResult {
  reqPerS: number;
  p50Ms: number;
  p99Ms: number;
  failed: number;
}

/** Runs the loop; `send(n)` makes request number n and resolves to whether it succeeded (a throw fails it). */
export async function closedLoop(clients: number, seconds: number, send: (n: number) => Promise<boolean>): Promise<LoopResult & { requests: number; seconds: number }> {
  const latencies: number[] = [];
  let failed = 0;
  let next = 0;
  const stopAt = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < stopAt) {
        const t = performance.now();
        if (await send(next++).catch(() => false)) latencies.push(performance.now() - t);
        else failed++;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * q))] ?? NaN;
  return { requests: latencies.length + failed, seconds: elapsed, reqPerS: latencies.length / elapsed, p50Ms: at(0.5), p99Ms: at(0.99), failed };
}
