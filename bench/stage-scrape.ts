// The service's stage times over one measured window (README "Where the time goes"): its
// catcomfort_stage_duration_seconds sums and counts scraped from /metrics before and after, so the
// mean of each stage is that window's alone. Peers have no such metric: null.
import { STAGES, type Stage } from '../src/pipeline/stage-times';

type Totals = Partial<Record<Stage, { sum: number; count: number }>>;

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
  for (const line of text.split('\n')) {
    const match = LINE.exec(line);
    const stage = match && /stage="([a-z]+)"/.exec(match[2]!)?.[1];
    if (!match || !stage || !(STAGES as readonly string[]).includes(stage)) continue;
    const t = (totals[stage as Stage] ??= { sum: 0, count: 0 });
    t[match[1] as 'sum' | 'count'] += Number(match[3]);
  }
  return Object.keys(totals).length > 0 ? totals : null;
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
