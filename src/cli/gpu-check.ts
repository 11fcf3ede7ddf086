// `catcomfort gpu-check`: is the GPU path healthy, and what are its figures? Each configuration
// runs in a child process of its own (an ONNX Runtime configuration is per process; a crash stays
// there): first the service's, from the environment; then, when that one is slow or stalls, the
// likely knobs one by one (session batch 1, each cuDNN search mode, pinned memory off; only with a
// GPU provider active). A child
// measures, in order:
//   1. the default pack's sessions alone at batch 1, 2, 4, 8 (a session per size), each size run
//      steadily, then all sizes alternating: a per-shape stall shows as alternating >> steady;
//   2. the service's packs warmed up as at start, then the photos of --photos one at a time, twice,
//      their detection states against --answers (a file --write-answers made, e.g. on a CPU at fp32);
//   3. a closed loop of in-process clients at 1, 32, 128 and 256 for --seconds each, with GPU
//      utilisation and memory from nvidia-smi; then the same levels over HTTP against the service
//      started as a child (http-load.ts), which should reach 90 % of in-process from 32 clients;
//      that service is a restart (the probe verdict this child proved is remembered), timed from
//      its spawn to /readyz 200, which should take at most 20 s.
// The probe verdict is remembered in the data folder as the service does (probe-verdicts.ts).
// The parent prints one table and a verdict and writes --json. No npm and no network: it runs from
// the offline bundle (`catcomfort/catcomfort gpu-check`).
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig, type Config } from '../config';
import { setLogLevel } from '../log';
import { loadPack } from '../packs/pack';
import { verdictsFile } from '../packs/probe/verdicts';
import { loadModels, registryOptions, warmUpAll } from '../packs/runtime';
import type { NativeAddon, NativeInfo } from '../native/addon';
import { median } from '../packs/session-sizes';
import { sampleGpu, type GpuUtilisation } from '../ops/gpu-sampler';
import { parse, UsageError } from './args';
import { closedLoop, type LoopResult } from './closed-loop';
import { httpLoad, type HttpLevel } from './http-load';

const USAGE = `Usage: catcomfort gpu-check --photos DIR [--answers FILE | --write-answers FILE] [--seconds N] [--json FILE]

Checks the GPU path with the configured providers (CATCOMFORT_EXECUTION_PROVIDERS, e.g. cuda,cpu):
sessions alone at batch 1/2/4/8 (steady and alternating), the packs on the photos of DIR twice
(states against --answers), and in-process load at 1, 32, 128 and 256 clients for N seconds each
(default 5), then over HTTP against the service started on 127.0.0.1; when not healthy, again with
session batch 1, each cuDNN search mode and pinned memory off.
Prints a table and a verdict; --json writes every figure. --write-answers FILE writes the states of
the photos instead (make the reference on a CPU with CATCOMFORT_PRECISION=fp32).

Exit codes: 0 healthy, 1 not healthy (or the run failed), 2 bad usage.`;

const SIZES = [1, 2, 4, 8];
const CLIENTS = [1, 32, 128, 256];
const RUNS = 10;
/** A photo over this at one client, or an alternating size this many times its steady time, is slow. */
const PHOTO_MS = 100;
const STALL_RATIO = 3;
/** HTTP throughput at 32 clients and more should reach this share of in-process. */
const HTTP_SHARE = 0.9;
/** A restart should be ready within this. */
const READY_MS = 20_000;

interface SessionFigures {
  stage: 'detector' | 'classifier';
  batch: number;
  steadyMs: number;
  alternatingMs: number;
}

interface LoadFigures extends LoopResult {
  clients: number;
  gpu: GpuUtilisation | null;
}

export interface ChildReport {
  name: string;
  providers: string[];
  sessions: SessionFigures[];
  photos: { count: number; maxMs: number; p50Ms: number; slowest: string; states: Record<string, string>; statesEqual: number | null; compared: number };
  load: LoadFigures[];
  /** The same levels over HTTP against the service started as a child (http-load.ts). */
  http: HttpLevel[];
  /** That service's spawn to /readyz 200: a restart with the probe verdict remembered; null before it ran. */
  readyMs: number | null;
  error?: string;
}

function photoFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => /\.(jpe?g|png|webp)$/i.test(f))
    .sort()
    .map((f) => path.join(dir, f));
}

/** Step 1: the default pack's sessions alone at each size, steady then alternating. */
async function sessionFigures(config: Config, addon: NativeAddon, info: NativeInfo): Promise<SessionFigures[]> {
  const options = registryOptions(config, info);
  const pack = await loadPack(path.join(config.modelsDir, config.defaultModel), { ...options, sessionBatch: SIZES.at(-1)! });
  const pipeline = await addon.createPipeline(pack.spec);
  const out: SessionFigures[] = [];
  try {
    for (const stage of ['detector', 'classifier'] as const) {
      const steady = new Map<number, number[]>();
      const alternating = new Map<number, number[]>(SIZES.map((s) => [s, []]));
      for (const batch of SIZES) {
        await addon.runSession(pipeline, stage, batch);
        const runs: number[] = [];
        for (let i = 0; i < RUNS; i++) runs.push(await addon.runSession(pipeline, stage, batch));
        steady.set(batch, runs);
      }
      for (let i = 0; i < RUNS; i++) for (const batch of SIZES) alternating.get(batch)!.push(await addon.runSession(pipeline, stage, batch));
      for (const batch of SIZES) out.push({ stage, batch, steadyMs: median(steady.get(batch)!), alternatingMs: median(alternating.get(batch)!) });
    }
  } finally {
    addon.releasePipeline(pipeline);
  }
  return out;
}

/** The child: one configuration measured (steps 1-3), its report as one JSON line on stdout. */
async function child(name: string, photosDir: string, answersFile: string | null, seconds: number): Promise<ChildReport> {
  setLogLevel('warn');
  const config = loadConfig(process.env);
  const { addon, info, registry } = await loadModels(config, verdictsFile(config.scan.dataDir));
  const report: ChildReport = {
    name,
    providers: info.providers.filter((p) => p.active).map((p) => p.name),
    sessions: await sessionFigures(config, addon, info),
    photos: { count: 0, maxMs: 0, p50Ms: 0, slowest: '', states: {}, statesEqual: null, compared: 0 },
    load: [],
    http: [],
    readyMs: null,
  };
  await warmUpAll(registry);
  const model = registry.get(config.defaultModel)!;
  const files = photoFiles(photosDir);
  const images = files.map((f) => readFileSync(f));
  const times: Array<[string, number]> = [];
  for (let pass = 0; pass < 2; pass++) {
    for (const [i, file] of files.entries()) {
      const started = performance.now();
      const analysis = await model.analyze({ data: images[i]!, encoding: 'bytes' }).catch(() => null);
      times.push([path.basename(file), performance.now() - started]);
      report.photos.states[path.basename(file)] = analysis?.detection ?? 'error';
    }
  }
  const slowest = times.reduce((a, b) => (b[1] > a[1] ? b : a), ['', 0]);
  report.photos = { ...report.photos, count: files.length, maxMs: slowest[1], slowest: slowest[0], p50Ms: median(times.map((t) => t[1])) };
  if (answersFile) {
    const answers = JSON.parse(readFileSync(answersFile, 'utf8')) as Record<string, string>;
    const names = Object.keys(report.photos.states).filter((f) => f in answers);
    report.photos.compared = names.length;
    report.photos.statesEqual = names.filter((f) => answers[f] === report.photos.states[f]).length;
  }
  for (const clients of CLIENTS) {
    const sampler = sampleGpu(config.deviceId);
    const loop = await closedLoop(clients, seconds, async (n) => {
      await model.analyze({ data: images[n % images.length]!, encoding: 'bytes' });
      return true;
    });
    report.load.push({ clients, ...loop, gpu: await sampler.stop() });
  }
  await registry.closeAll();
  const served = await httpLoad({}, images, CLIENTS, seconds, 5 * 60_000);
  return { ...report, http: served.levels, readyMs: served.readyMs };
}

/** Runs one configuration in a child of this command; resolves to its report (an error report when it failed). */
function runChild(name: string, env: Record<string, string>, args: string[], timeoutMs: number): Promise<ChildReport> {
  return new Promise((resolve) => {
    // A queue that holds every client of the largest load level, and a deadline long enough for its
    // wait: a closed loop measures capacity, so its requests wait rather than fail.
    const queue = {
      CATCOMFORT_QUEUE_MAX: process.env.CATCOMFORT_QUEUE_MAX ?? String(2 * CLIENTS.at(-1)!),
      CATCOMFORT_REQUEST_TIMEOUT_MS: process.env.CATCOMFORT_REQUEST_TIMEOUT_MS ?? '60000',
    };
    // Its own process group, so that the time limit also ends the service it started.
    const proc = spawn(process.execPath, [process.argv[1]!, 'gpu-check', '--child', name, ...args], { env: { ...process.env, ...queue, ...env }, stdio: ['ignore', 'pipe', 'inherit'], detached: true });
    let out = '';
    proc.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const timer = setTimeout(() => process.kill(-proc.pid!, 'SIGKILL'), timeoutMs);
    proc.on('close', (code, signal) => {
      clearTimeout(timer);
      const line = out.split('\n').find((l) => l.startsWith('{"name":'));
      const failed = (error: string): ChildReport => ({ name, providers: [], sessions: [], photos: { count: 0, maxMs: NaN, p50Ms: NaN, slowest: '', states: {}, statesEqual: null, compared: 0 }, load: [], http: [], readyMs: null, error });
      if (line && code === 0) resolve(JSON.parse(line) as ChildReport);
      else resolve(failed(signal ? `ended by ${signal}${signal === 'SIGKILL' ? ' (time limit)' : ''}` : `exited with code ${code}`));
    });
  });
}

/** What is wrong with a report, or [] when healthy. */
export function problems(r: ChildReport): string[] {
  if (r.error) return [r.error];
  const out: string[] = [];
  if (!r.providers.some((p) => p !== 'cpu')) out.push('no GPU provider active');
  for (const s of r.sessions) if (s.alternatingMs > STALL_RATIO * s.steadyMs && s.alternatingMs - s.steadyMs > 20) out.push(`${s.stage} batch ${s.batch}: ${s.alternatingMs.toFixed(1)} ms alternating vs ${s.steadyMs.toFixed(1)} ms steady (per-shape stall)`);
  if (r.photos.maxMs > PHOTO_MS) out.push(`${r.photos.slowest} took ${Math.round(r.photos.maxMs)} ms at one client (limit ${PHOTO_MS})`);
  if (r.photos.statesEqual !== null && r.photos.statesEqual < r.photos.compared) out.push(`${r.photos.compared - r.photos.statesEqual} of ${r.photos.compared} states differ from the answers`);
  const failed = r.load.reduce((n, l) => n + l.failed, 0) + r.http.reduce((n, l) => n + l.failed, 0);
  if (failed > 0) out.push(`${failed} requests failed under load`);
  if (r.readyMs !== null && r.readyMs > READY_MS) out.push(`restart ready in ${(r.readyMs / 1000).toFixed(1)} s (limit ${READY_MS / 1000})`);
  for (const h of r.http) {
    const inProcess = r.load.find((l) => l.clients === h.clients)?.reqPerS ?? 0;
    if (h.clients >= 32 && h.reqPerS < HTTP_SHARE * inProcess) out.push(`HTTP at ${h.clients} clients: ${h.reqPerS.toFixed(1)} req/s, under ${HTTP_SHARE * 100} % of in-process ${inProcess.toFixed(1)}`);
  }
  return out;
}

function table(reports: ChildReport[]): string {
  const cell = (n: number | undefined, digits = 0) => (n === undefined || Number.isNaN(n) ? '–' : n.toFixed(digits));
  const lines = [
    `| configuration | providers | worst alternating/steady | slowest photo ms | states equal | ${CLIENTS.map((c) => `req/s c=${c}`).join(' | ')} | ${CLIENTS.map((c) => `HTTP c=${c}`).join(' | ')} | restart ready s | GPU util max % | GPU MiB max | problems |`,
    `|---|---|---:|---:|---:|${CLIENTS.map(() => '---:').join('|')}|${CLIENTS.map(() => '---:').join('|')}|---:|---:|---:|---|`,
  ];
  for (const r of reports) {
    const ratio = Math.max(0, ...r.sessions.map((s) => s.alternatingMs / s.steadyMs));
    const gpu = r.load.map((l) => l.gpu).filter((g): g is GpuUtilisation => g !== null);
    lines.push(
      `| ${r.name} | ${r.providers.join(',') || '–'} | ${r.sessions.length ? `${ratio.toFixed(2)}x` : '–'} | ${cell(r.photos.maxMs)} | ${r.photos.statesEqual === null ? '–' : `${r.photos.statesEqual}/${r.photos.compared}`} | ` +
        `${CLIENTS.map((c) => cell(r.load.find((l) => l.clients === c)?.reqPerS, 1)).join(' | ')} | ${CLIENTS.map((c) => cell(r.http.find((l) => l.clients === c)?.reqPerS, 1)).join(' | ')} | ${r.readyMs === null ? '–' : cell(r.readyMs / 1000, 1)} | ${gpu.length ? Math.max(...gpu.map((g) => g.maxPct)) : '–'} | ${gpu.length ? Math.max(...gpu.map((g) => g.memoryMiBMax)) : '–'} | ${problems(r).join('; ') || 'none'} |`,
    );
  }
  return lines.join('\n');
}

const KNOBS: Array<[string, Record<string, string>]> = [
  ['session batch 1', { CATCOMFORT_SESSION_BATCH: '1' }],
  ['cuDNN EXHAUSTIVE', { CATCOMFORT_CUDNN_CONV_ALGO_SEARCH: 'EXHAUSTIVE' }],
  ['cuDNN HEURISTIC', { CATCOMFORT_CUDNN_CONV_ALGO_SEARCH: 'HEURISTIC' }],
  ['cuDNN DEFAULT', { CATCOMFORT_CUDNN_CONV_ALGO_SEARCH: 'DEFAULT' }],
  ['pinned memory off', { CATCOMFORT_PINNED_MEMORY: 'false' }],
];
/** The whole check ends within this. */
const BUDGET_MS = 8 * 60_000;

export async function gpuCheckCommand(argv: string[]): Promise<number> {
  const parsed = parse(argv, USAGE, { photos: { type: 'string' }, answers: { type: 'string' }, 'write-answers': { type: 'string' }, seconds: { type: 'string' }, json: { type: 'string' }, child: { type: 'string' } });
  if (!parsed) return 0;
  const v = parsed.values as Record<string, string | undefined>;
  if (!v.photos) throw new UsageError('--photos DIR is needed', USAGE);
  if (v.answers && v['write-answers']) throw new UsageError('give --answers or --write-answers, not both', USAGE);
  const seconds = v.seconds === undefined ? 5 : Number(v.seconds);
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > 60) throw new UsageError('--seconds must be a whole number from 1 to 60', USAGE);
  if (photoFiles(v.photos).length === 0) throw new UsageError(`no .jpg, .png or .webp photos in ${v.photos}`, USAGE);
  const forward = ['--photos', v.photos, '--seconds', String(seconds), ...(v.answers ? ['--answers', v.answers] : [])];

  if (v.child !== undefined) {
    process.stdout.write(`${JSON.stringify(await child(v.child, v.photos, v.answers ?? null, seconds))}\n`);
    return 0;
  }
  const deadline = performance.now() + BUDGET_MS;
  const left = () => deadline - performance.now();
  const reports = [await runChild('as configured', {}, forward, left())];
  if (v['write-answers']) {
    writeFileSync(v['write-answers'], `${JSON.stringify(reports[0]!.photos.states, null, 2)}\n`);
    process.stdout.write(`gpu-check: wrote the states of ${reports[0]!.photos.count} photos to ${v['write-answers']}\n`);
    return reports[0]!.error ? 1 : 0;
  }
  const gpuActive = reports[0]!.providers.some((p) => p !== 'cpu');
  if (gpuActive && problems(reports[0]!).length > 0) {
    for (const [name, env] of KNOBS) {
      if (left() < 30_000) break;
      reports.push(await runChild(name, env, forward, left()));
    }
  }
  const healthy = problems(reports[0]!).length === 0;
  process.stdout.write(`${table(reports)}\n\nverdict: ${healthy ? 'healthy' : `NOT healthy as configured: ${problems(reports[0]!).join('; ')}`}\n`);
  if (v.json) writeFileSync(v.json, `${JSON.stringify({ at: new Date().toISOString(), healthy, reports }, null, 2)}\n`);
  return healthy ? 0 : 1;
}
