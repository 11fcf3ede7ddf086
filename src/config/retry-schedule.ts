// The webhook retry schedule setting (CATCOMFORT_WEBHOOK_RETRY_SCHEDULE): waits like "5s,30s,2m".

/** The default waits after attempts 1..6; a delivery has one attempt more than the schedule has steps. */
export const DEFAULT_RETRY_SCHEDULE = '5s,30s,2m,10m,1h,6h';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** "5s,30s,2m" -> [5000, 30000, 120000]; throws RangeError naming the bad step. */
export function parseRetrySchedule(text: string): number[] {
  const steps = text.split(',').map((s) => s.trim());
  return steps.map((step) => {
    const m = /^(\d+)(ms|s|m|h)$/.exec(step);
    const ms = m ? Number(m[1]) * UNIT_MS[m[2]!]! : NaN;
    if (!(ms >= 1 && ms <= 7 * 24 * 3_600_000)) throw new RangeError(`"${step}" is not a wait from 1ms to 168h (e.g. 500ms, 5s, 2m, 1h)`);
    return ms;
  });
}
