// When a failed delivery is tried again: on the retry schedule (CATCOMFORT_WEBHOOK_RETRY_SCHEDULE,
// read by src/config/retry-schedule.ts), each wait drawn within ±20 % of its step so that
// receivers that failed together are not retried together.

/** The wait after failed attempt `attempt` (1-based), or null when it was the last one. */
export function retryDelayMs(schedule: readonly number[], attempt: number, random: () => number = Math.random): number | null {
  const step = schedule[attempt - 1];
  return step === undefined ? null : Math.max(1, Math.round(step * (0.8 + 0.4 * random())));
}
