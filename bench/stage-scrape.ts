// The service's stage times and main-thread load over one measured window (README "Where the time
// goes"): its catcomfort_stage_duration_seconds sums and counts, event loop busy seconds and
// main-thread CPU seconds scraped from /metrics before and after, so each figure is that window's
// alone. Peers have no such metrics: null.
import { STAGES, type Stage } from '../src/pipeline/stage-times';

type Totals = Partial<Record<Stage, { sum: number; count: number }>> & { loopBusyS?: number; mainCpuS?: number; requests?: number };

const LINE = /^catcomfort_stage_duration_seconds_(sum|count)\{([^}]*)\}\s+(\S+)$/;

/** The stage sums and counts (all models) at `origin`, or null when it serves no such metrics. */
export async function scrapeStages(origin: string, apiKey: string): Promise<Totals | null> {
  let text: string;
  try {
    const response = await fetch(`${origin}/metrics`, { headers: { 'api-key': apiKey } });
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
  for (const line of text.split('\n')) {
    const match = LINE.exec(line);
    const stage = match && /stage="([a-z]+)"/.exec(match[2]!)?.[1];
    if (!match || !stage || !(STAGES as readonly string[]).includes(stage)) continue;
    const t = (totals[stage as Stage] ??= { sum: 0, count: 0 });
    t[match[1] as 'sum' | 'count'] += Number(match[3]);
  }
  return totals.loopBusyS !== undefined ? totals : null;
}

/** The event loop's utilisation and main-thread CPU microseconds per request over a window of `seconds` with `requests` answered. */
export function loopFigures(before: Totals | null, after: Totals | null, seconds: number, requests: number): { utilization: number; mainThreadUsPerRequest: number | null } | null {
  if (before?.loopBusyS === undefined || after?.loopBusyS === undefined) return null;
  const cpu = before.mainCpuS !== undefined && after.mainCpuS !== undefined ? after.mainCpuS - before.mainCpuS : null;
  return {
    utilization: Number(((after.loopBusyS - before.loopBusyS) / seconds).toFixed(3)),
    mainThreadUsPerRequest: cpu !== null && requests > 0 ? Math.round((cpu * 1e6) / requests) : null,
  };
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
