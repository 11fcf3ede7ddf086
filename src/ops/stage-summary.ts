// Per-stage times (src/timing/stage-times.ts) as the operator reads them: each observation goes
// to the `catcomfort_stage_duration_seconds` histogram (the window's own series of it) and to a
// window of the last WINDOW values per model and stage, whose count, mean, p50 and p99 `/v2/stats` shows.
import { STAGES, type Stage } from '../timing/stage-times';
import { metrics } from './metrics';
import type { HistogramSeries } from './tally-histogram';

/** Values kept per model and stage for the summaries. */
export const WINDOW = 2048;

export interface StageSummary {
  /** Observations since start. */
  count: number;
  /** Over the last WINDOW observations, milliseconds. */
  meanMs: number;
  p50Ms: number;
  p99Ms: number;
}

class Window {
  private readonly values = new Float64Array(WINDOW);
  /** Its series of the stage histogram. */
  readonly histogram: HistogramSeries;
  count = 0;

  constructor(model: string, stage: Stage) {
    this.histogram = metrics.stageDuration.of({ model, stage });
  }

  add(ms: number): void {
    this.histogram.observe(ms / 1000);
    this.values[this.count % WINDOW] = ms;
    this.count++;
  }

  summary(): StageSummary {
    const kept = Array.from(this.values.subarray(0, Math.min(this.count, WINDOW))).sort((a, b) => a - b);
    const at = (q: number) => (kept.length === 0 ? 0 : kept[Math.min(kept.length - 1, Math.floor(q * kept.length))]!);
    const mean = kept.length === 0 ? 0 : kept.reduce((s, v) => s + v, 0) / kept.length;
    const round = (ms: number) => Math.round(ms * 1000) / 1000;
    return { count: this.count, meanMs: round(mean), p50Ms: round(at(0.5)), p99Ms: round(at(0.99)) };
  }
}

const windows = new Map<string, Map<Stage, Window>>();

/** Records one request's or image's stage times (ms) for `model`. */
export function observeStages(model: string, stages: Partial<Record<Stage, number>>): void {
  let byStage = windows.get(model);
  if (!byStage) windows.set(model, (byStage = new Map()));
  for (const key in stages) {
    const stage = key as Stage;
    const ms = stages[stage];
    if (ms === undefined) continue;
    let w = byStage.get(stage);
    if (!w) byStage.set(stage, (w = new Window(model, stage)));
    w.add(ms);
  }
}

/** The summaries of `model`'s stages seen so far, in stage order. */
export function stageSummaries(model: string): Partial<Record<Stage, StageSummary>> {
  const byStage = windows.get(model);
  const out: Partial<Record<Stage, StageSummary>> = {};
  for (const stage of STAGES) {
    const w = byStage?.get(stage);
    if (w) out[stage] = w.summary();
  }
  return out;
}

/** `model`'s cumulative stage sums (seconds) and counts since start: its stage histogram's. */
export function stageTotals(model: string): Partial<Record<Stage, { sum: number; count: number }>> {
  const out: Partial<Record<Stage, { sum: number; count: number }>> = {};
  for (const [stage, w] of windows.get(model) ?? []) out[stage] = { sum: w.histogram.sum, count: w.histogram.count };
  return out;
}
