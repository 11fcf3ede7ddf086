// The time budget of a `catcomfort gpu-check` run (--budget): one deadline for the whole check,
// and the expected length of a child from what the latest children took per step, so that a
// configuration that would not fit is skipped, with a line saying so, instead of being cut off.
import type { ChildReport, Step } from './report';

/** Starting a child process and reading its report, beyond its steps. */
const SPAWN_MS = 2_000;

export class Budget {
  /** Epoch milliseconds at which the check ends (children are killed there). */
  readonly deadline: number;
  private readonly latest: Partial<Record<Step | 'start', number>> = {};

  constructor(seconds: number) {
    this.deadline = Date.now() + seconds * 1000;
  }

  left(): number {
    return this.deadline - Date.now();
  }

  /** A child ended: its step times become the expectation for the next. */
  note(report: ChildReport): void {
    Object.assign(this.latest, report.timings);
  }

  /** Expected milliseconds of a child running `steps`; a step not timed yet counts as `untimedMs`. */
  expected(steps: Iterable<Step>, untimedMs = 0): number {
    let ms = SPAWN_MS + (this.latest.start ?? 0);
    for (const step of steps) ms += this.latest[step] ?? untimedMs;
    return ms;
  }
}
