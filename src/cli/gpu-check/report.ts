// What one `catcomfort gpu-check` configuration measured (the report its child process prints as
// one JSON line), the steps a child can be asked to run, and the verdict's rules on a report: which
// figures make the configuration "not healthy". No I/O here; the child (child.ts) fills reports,
// the parent prints them (rows.ts) and compares them (sweep.ts).
import type { GpuUtilisation } from '../../ops/gpu-sampler';
import type { LoopResult } from '../closed-loop';
import type { HttpLevel } from '../http-load';
import type { WindowFigures } from '../stage-scrape';

/** The steps of a child, in the order it runs them (see child.ts). */
export const STEPS = ['sessions', 'photos', 'load', 'http', 'scans'] as const;
export type Step = (typeof STEPS)[number];

/** The in-process and HTTP load levels (closed-loop clients). */
export const CLIENTS = [1, 32, 128, 256];
/** A photo over this at one client, or an alternating size this many times its steady time, is slow. */
const PHOTO_MS = 100;
const STALL_RATIO = 3;
/** HTTP throughput at 32 clients and more should reach this share of in-process. */
const HTTP_SHARE = 0.9;
/** A restart should be ready within this. */
const READY_MS = 20_000;

export interface SessionFigures {
  stage: 'detector' | 'classifier';
  batch: number;
  steadyMs: number;
  alternatingMs: number;
}

export interface PhotoFigures {
  count: number;
  maxMs: number;
  p50Ms: number;
  slowest: string;
  states: Record<string, string>;
  statesEqual: number | null;
  compared: number;
}

/** An in-process level, with the stages and the main thread's load in its window (stage-scrape.ts). */
export interface LoadFigures extends LoopResult, Partial<WindowFigures> {
  clients: number;
  gpu: GpuUtilisation | null;
}

/** The default pack's batching in effect in the child: its batcher's limits and the addon's pool. */
export interface Batching {
  maxBatchSize: number;
  maxInFlight: number;
  poolThreads: number;
}

/** A backlog of scans drained by the service's scan workers (scan-drain.ts). */
export interface ScanDrain {
  scans: number;
  completed: number;
  failed: number;
  /** From the first claim to the last scan finished, as the store recorded them. */
  drainMs: number;
  /** Finished scans per second over drainMs. */
  imagesPerS: number;
}

export interface ChildReport {
  name: string;
  /** The settings this configuration set on top of the environment (added by the parent). */
  env: Record<string, string>;
  providers: string[];
  batching: Batching | null;
  sessions: SessionFigures[];
  /** Null when the photos step did not run. */
  photos: PhotoFigures | null;
  load: LoadFigures[];
  /** The same levels over HTTP against the service started as a child (http-load.ts). */
  http: HttpLevel[];
  /** That service's spawn to /readyz 200: a restart with the probe verdict remembered; null before it ran. */
  readyMs: number | null;
  scans: ScanDrain | null;
  /** Milliseconds per step, and `start` for loading and warming up the packs in the child. */
  timings: Partial<Record<Step | 'start', number>>;
  error?: string;
}

/** The report of a child that ended without one. */
export function failedReport(name: string, env: Record<string, string>, error: string): ChildReport {
  return { name, env, providers: [], batching: null, sessions: [], photos: null, load: [], http: [], readyMs: null, scans: null, timings: {}, error };
}

/** In-process figures at the top client level, the throughput the sweep compares; undefined when not measured. */
export function topLevel(r: ChildReport): LoadFigures | undefined {
  return r.load.find((l) => l.clients === CLIENTS.at(-1));
}

/** Requests that failed under load, in-process and over HTTP. */
export function failedRequests(r: ChildReport): number {
  return r.load.reduce((n, l) => n + l.failed, 0) + r.http.reduce((n, l) => n + l.failed, 0);
}

/** The scan backlog's images per second over /v2/predict's in-process req/s at the top level (target >= 0.8). */
export function scanRatio(r: ChildReport): number | undefined {
  const top = topLevel(r);
  return r.scans && top ? r.scans.imagesPerS / top.reqPerS : undefined;
}

/** What is wrong with a report, or [] when healthy. */
export function problems(r: ChildReport): string[] {
  if (r.error) return [r.error];
  const out: string[] = [];
  if (!r.providers.some((p) => p !== 'cpu')) out.push('no GPU provider active');
  else if (r.providers.some((p) => p.startsWith('simulated'))) out.push(`${r.providers.join(', ')} device: no GPU measured (benchmarks and tests only)`);
  for (const s of r.sessions) if (s.alternatingMs > STALL_RATIO * s.steadyMs && s.alternatingMs - s.steadyMs > 20) out.push(`${s.stage} batch ${s.batch}: ${s.alternatingMs.toFixed(1)} ms alternating vs ${s.steadyMs.toFixed(1)} ms steady (per-shape stall)`);
  const photos = r.photos;
  if (photos && photos.maxMs > PHOTO_MS) out.push(`${photos.slowest} took ${Math.round(photos.maxMs)} ms at one client (limit ${PHOTO_MS})`);
  if (photos && photos.statesEqual !== null && photos.statesEqual < photos.compared) out.push(`${photos.compared - photos.statesEqual} of ${photos.compared} states differ from the answers`);
  const failed = failedRequests(r);
  if (failed > 0) out.push(`${failed} requests failed under load`);
  if (r.readyMs !== null && r.readyMs > READY_MS) out.push(`restart ready in ${(r.readyMs / 1000).toFixed(1)} s (limit ${READY_MS / 1000})`);
  for (const h of r.http) {
    const inProcess = r.load.find((l) => l.clients === h.clients)?.reqPerS ?? 0;
    if (h.clients >= 32 && h.reqPerS < HTTP_SHARE * inProcess) out.push(`HTTP at ${h.clients} clients: ${h.reqPerS.toFixed(1)} req/s, under ${HTTP_SHARE * 100} % of in-process ${inProcess.toFixed(1)}`);
  }
  if (r.scans && r.scans.failed > 0) out.push(`${r.scans.failed} of ${r.scans.scans} scans FAILED`);
  if (r.scans && r.scans.completed + r.scans.failed < r.scans.scans) out.push(`${r.scans.completed + r.scans.failed} of ${r.scans.scans} scans finished within the time limit`);
  return out;
}
