// The table of `catcomfort gpu-check`, streamed: the header once before the first row, then each
// configuration's row the moment its child ends, and the --json file rewritten (whole, through a
// rename so that a reader never sees half a file) with every report so far. A run cut off by a
// time limit keeps every finished row on its output and in its JSON (`finished: false` until the
// end).
import { renameSync, writeFileSync } from 'node:fs';
import type { GpuUtilisation } from '../../ops/gpu-sampler';
import { STAGES } from '../../timing/stage-times';
import { LOOP_COLUMNS, loopCells, type WindowFigures } from '../stage-scrape';
import { CLIENTS, problems, scanRatio, type ChildReport } from './report';

const cell = (n: number | undefined, digits = 0) => (n === undefined || Number.isNaN(n) ? '–' : n.toFixed(digits));

export function header(): string {
  return [
    `| configuration | providers | batch x in-flight x pool | worst alternating/steady | slowest photo ms | states equal | ${CLIENTS.map((c) => `req/s c=${c}`).join(' | ')} | ${CLIENTS.map((c) => `HTTP c=${c}`).join(' | ')} | restart ready s | GPU util max % | GPU MiB max | scan img/s | scan/predict | problems |`,
    `|---|---|---|---:|---:|---:|${CLIENTS.map(() => '---:').join('|')}|${CLIENTS.map(() => '---:').join('|')}|---:|---:|---:|---:|---:|---|`,
  ].join('\n');
}

export function row(r: ChildReport): string {
  const ratio = Math.max(0, ...r.sessions.map((s) => s.alternatingMs / s.steadyMs));
  const gpu = r.load.map((l) => l.gpu).filter((g): g is GpuUtilisation => g !== null);
  const b = r.batching;
  return (
    `| ${r.name} | ${r.providers.join(',') || '–'} | ${b ? `${b.maxBatchSize} x ${b.maxInFlight} x ${b.poolThreads}` : '–'} | ${r.sessions.length ? `${ratio.toFixed(2)}x` : '–'} | ${cell(r.photos?.maxMs)} | ` +
    `${r.photos?.statesEqual == null ? '–' : `${r.photos.statesEqual}/${r.photos.compared}`} | ` +
    `${CLIENTS.map((c) => cell(r.load.find((l) => l.clients === c)?.reqPerS, 1)).join(' | ')} | ${CLIENTS.map((c) => cell(r.http.find((l) => l.clients === c)?.reqPerS, 1)).join(' | ')} | ` +
    `${r.readyMs === null ? '–' : cell(r.readyMs / 1000, 1)} | ${gpu.length ? cell(Math.max(...gpu.map((g) => g.maxPct))) : '–'} | ${gpu.length ? Math.max(...gpu.map((g) => g.memoryMiBMax)) : '–'} | ` +
    `${cell(r.scans?.imagesPerS, 1)} | ${cell(scanRatio(r), 2)} | ${problems(r).join('; ') || 'none'} |`
  );
}

/** Prints rows as they come and keeps the --json file (when given) up to date. */
export class Rows {
  private readonly reports: ChildReport[] = [];

  constructor(
    private readonly out: (text: string) => void,
    private readonly jsonFile: string | undefined,
    /** Fields of the JSON beside the reports (the run's settings). */
    private readonly meta: Record<string, unknown>,
  ) {}

  get all(): readonly ChildReport[] {
    return this.reports;
  }

  /** A configuration ended: its report into the JSON, then its row (the header first, once). */
  add(report: ChildReport): void {
    this.reports.push(report);
    this.write({ finished: false });
    this.out(`${this.reports.length === 1 ? `${header()}\n` : ''}${row(report)}\n`);
  }

  /** Rewrites the JSON: the settings, every report so far and `extra`. */
  write(extra: Record<string, unknown>): void {
    if (!this.jsonFile) return;
    const partial = `${this.jsonFile}.partial`;
    writeFileSync(partial, `${JSON.stringify({ at: new Date().toISOString(), ...this.meta, ...extra, reports: this.reports }, null, 2)}\n`);
    renameSync(partial, this.jsonFile);
  }
}

/**
 * Where the time went at each load level of each configuration (docs/performance.md "Where the
 * time goes"): each stage's mean ms (in-process has no read or convert), the event loop's busy
 * share, the main thread's CPU microseconds per request and the collector's share of it; every
 * level is also in the --json file.
 */
export function stageTable(reports: readonly ChildReport[]): string {
  const lines = [
    `| stages of | load | clients | ${[...STAGES, ...LOOP_COLUMNS].join(' | ')} |`,
    `|---|---|---:|${[...STAGES, ...LOOP_COLUMNS].map(() => '---:').join('|')}|`,
  ];
  const line = (name: string, load: string, clients: number, f: Partial<WindowFigures>) => {
    if (!f.stagesMs) return;
    lines.push(`| ${name} | ${load} | ${clients} | ${[...STAGES.map((s) => cell(f.stagesMs![s], 2)), ...loopCells(f.eventLoop)].join(' | ')} |`);
  };
  for (const r of reports) {
    for (const l of r.load) line(r.name, 'in-process', l.clients, l);
    for (const l of r.http) line(r.name, 'HTTP', l.clients, l);
  }
  return lines.length > 2 ? `${lines.join('\n')}\n` : '';
}
