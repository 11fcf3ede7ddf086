// One measured window of a load run, whichever client made it (bench/load-worker.ts sums it up into a
// LoadLevel), and the closed loop that makes one from a "send one request" function: `concurrency`
// clients, each sending its next request when its last one is answered, photos rotated across all;
// with a rate, no request starts before its turn at that many a second in all (autocannon's overallRate).
// The HTTP rows get theirs from autocannon (bench/load-autocannon.ts), gRPC from this loop.

export interface WindowResult {
  /** Latency of each successful answer, ms. */
  latencies: number[];
  /** Answers, successful or not. */
  responses: number;
  /** Refusals for overload: HTTP 429; gRPC UNAVAILABLE with error-code overloaded. */
  overloaded: number;
  /** Other unsuccessful answers, by status (HTTP "503"; gRPC "INVALID_ARGUMENT"). */
  refused: Record<string, number>;
  /** Requests that got no answer (connection or transport failures). */
  errors: number;
  timeouts: number;
  /** From the start to the last answer (in-flight requests drain after the window). */
  durationS: number;
}

/** Answers that were not successful: overload refusals and the others. */
export function refusals(w: WindowResult): number {
  return w.overloaded + Object.values(w.refused).reduce((a, n) => a + n, 0);
}

/** What one request came to: success, an overload refusal, another refusal, no answer in time, or none at all. */
export type Outcome = 'ok' | 'overloaded' | { refused: string } | 'timeout' | 'error';

/** Sends request number `index` (the caller rotates its photos by it) and resolves with its outcome; never rejects. */
export type SendOne = (index: number) => Promise<Outcome>;

export async function closedLoopWindow(send: SendOne, concurrency: number, seconds: number, startAt: number, ratePerS?: number): Promise<WindowResult> {
  const w: WindowResult = { latencies: [], responses: 0, overloaded: 0, refused: {}, errors: 0, timeouts: 0, durationS: 0 };
  let next = startAt;
  const started = performance.now();
  const end = started + seconds * 1000;
  let turns = 0;
  const turn = (): Promise<void> | undefined => {
    if (!ratePerS) return undefined;
    const wait = started + (turns++ * 1000) / ratePerS - performance.now();
    return wait > 0 ? new Promise((resolve) => setTimeout(resolve, wait)) : undefined;
  };
  const client = async (): Promise<void> => {
    while (performance.now() < end) {
      await turn();
      if (performance.now() >= end) break;
      const t = performance.now();
      const outcome = await send(next++);
      if (outcome === 'timeout') w.timeouts++;
      else if (outcome === 'error') w.errors++;
      else {
        w.responses++;
        if (outcome === 'ok') w.latencies.push(performance.now() - t);
        else if (outcome === 'overloaded') w.overloaded++;
        else w.refused[outcome.refused] = (w.refused[outcome.refused] ?? 0) + 1;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, client));
  w.durationS = (performance.now() - started) / 1000;
  return w;
}
