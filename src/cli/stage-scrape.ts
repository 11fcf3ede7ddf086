// The service's stage times and main-thread load over one measured window (docs/performance.md
// "Where the time goes"): its catcomfort_stage_duration_seconds sums and counts, event loop busy
// seconds and main-thread CPU and GC seconds scraped from /metrics before and after, so each figure is that window's
// alone (the bench's levels and gpu-check's HTTP levels). Peers have no such metrics: null. In
// the process itself, stageWindow reads the same figures without a scrape.
import { eventLoopBusySeconds, gcSeconds, gcShareOf, mainThreadCpuSeconds } from '../ops/event-loop';
import { stageTotals } from '../ops/stage-summary';
import { STAGES, type Stage } from '../timing/stage-times';

export type Totals = Partial<Record<Stage, { sum: number; count: number }>> & { loopBusyS?: number; mainCpuS?: number; gcS?: number; requests?: number };

const LINE = /^catcomfort_stage_duration_seconds_(sum|count)\{([^}]*)\}\s+(\S+)$/;

/** The stage sums and counts (all models) at `origin`, or null when it serves no such metrics. */
export async function scrapeStages(origin: string, apiKey: string): Promise<Totals | null> {
  let text: string;
  try {
    const names = ['catcomfort_stage_duration_seconds', 'catcomfort_event_loop_busy_seconds_total', 'catcomfort_main_thread_cpu_seconds_total', 'catcomfort_gc_seconds_total'];
    const response = await fetch(`${origin}/metrics?${names.map((n) => `name=${n}`).join('&')}`, { headers: { 'api-key': apiKey } });
    if (!response.ok) return null;
    text = await response.text();
  } catch {
    return null;
  }
  const totals: Totals = {};
  const single = (name: string) => {
    const match = new RegExp(`^${name}\\s+(\\S+)$`, 'm').exec(text);
    return match ? Number(match[1]) : undefined;
  };
  totals.loopBusyS = single('catcomfort_event_loop_busy_seconds_total');
  totals.mainCpuS = single('catcomfort_main_thread_cpu_seconds_total');
  totals.gcS = single('catcomfort_gc_seconds_total');
  for (const line of text.split('\n')) {
    const match = LINE.exec(line);
    const stage = match && /stage="([a-z]+)"/.exec(match[2]!)?.[1];
    if (!match || !stage || !(STAGES as readonly string[]).includes(stage)) continue;
    const t = (totals[stage as Stage] ??= { sum: 0, count: 0 });
    t[match[1] as 'sum' | 'count'] += Number(match[3]);
  }
  return totals.loopBusyS !== undefined ? totals : null;
}

/** The main thread over one window: the loop's busy share, CPU microseconds per request, the collector's share of that CPU. */
export interface LoopFigures {
  utilization: number;
  mainThreadUsPerRequest: number | null;
  gcShare: number | null;
}

/** The event loop's figures over a window of `seconds` with `requests` answered. */
export function loopFigures(before: Totals | null, after: Totals | null, seconds: number, requests: number): LoopFigures | null {
  if (before?.loopBusyS === undefined || after?.loopBusyS === undefined) return null;
  const cpu = before.mainCpuS !== undefined && after.mainCpuS !== undefined ? after.mainCpuS - before.mainCpuS : null;
  return {
    utilization: Number(((after.loopBusyS - before.loopBusyS) / seconds).toFixed(3)),
    mainThreadUsPerRequest: cpu !== null && requests > 0 ? Math.round((cpu * 1e6) / requests) : null,
    gcShare: before.gcS !== undefined && after.gcS !== undefined ? gcShareOf(after.gcS - before.gcS, cpu) : null,
  };
}

/** The loop columns of a stage table: busy share, main-thread us per request, GC share ('–' where unknown). */
export const LOOP_COLUMNS = ['event loop busy', 'main thread us/request', 'GC share'] as const;

export function loopCells(loop: LoopFigures | null | undefined): string[] {
  const percent = (share: number | null | undefined) => (share === null || share === undefined ? '–' : `${Math.round(share * 100)} %`);
  return [percent(loop?.utilization), loop?.mainThreadUsPerRequest?.toString() ?? '–', percent(loop?.gcShare)];
}

/** Mean milliseconds per stage between two scrapes; null when either is missing. */
export function stageMeansMs(before: Totals | null, after: Totals | null): Partial<Record<Stage, number>> | null {
  if (!before || !after) return null;
  const out: Partial<Record<Stage, number>> = {};
  for (const stage of STAGES) {
    const a = after[stage];
    const b = before[stage] ?? { sum: 0, count: 0 };
    if (a && a.count > b.count) out[stage] = Number((((a.sum - b.sum) / (a.count - b.count)) * 1000).toFixed(3));
  }
  return out;
}

/** What a measured window saw: each stage's mean ms, the loop's busy share and main-thread us per request. */
export interface WindowFigures {
  stagesMs: Partial<Record<Stage, number>> | null;
  eventLoop: LoopFigures | null;
}

/** This process's own totals for `model` now (in-process load, no scrape). */
export function ownTotals(model: string): Totals {
  return { ...stageTotals(model), loopBusyS: eventLoopBusySeconds(), mainCpuS: mainThreadCpuSeconds() ?? undefined, gcS: gcSeconds() };
}

/** The window between two readings of totals, `seconds` long with `requests` answered. */
export function windowFigures(before: Totals | null, after: Totals | null, seconds: number, requests: number): WindowFigures {
  return { stagesMs: stageMeansMs(before, after), eventLoop: loopFigures(before, after, seconds, requests) };
}
