// One `catcomfort gpu-check` configuration, measured in a child process of its own (an ONNX
// Runtime configuration is per process; a crash stays there; with --simulate, the simulated
// device of CATCOMFORT_BENCH_SIMULATE is too). It loads the packs with the
// service's code (the probe verdict remembered in the data folder as the service does), then runs
// the steps it was given, in this order:
//   sessions: the default pack's sessions alone at batch 1, 2, 4, 8 (a session per size), each size
//             run steadily, then all sizes alternating: a per-shape stall shows as alternating >> steady;
//   photos:   the packs warmed up as at start, the photos one at a time, twice, their detection
//             states against the answers (a file --write-answers made, e.g. on a CPU at fp32);
//   load:     closed loops of in-process clients at each level of CLIENTS for `seconds` each, with
//             GPU utilisation and memory from nvidia-smi (a simulated device: its busy share);
//   http:     the same levels over HTTP against the service started as a child (http-load.ts),
//             a restart timed from its spawn to /readyz 200;
//   scans:    a backlog of scans drained by the service's scan workers (scan-drain.ts).
// The batching in effect (the default pack's batcher limits, the pool's threads) and each step's
// milliseconds go in the report, which the child prints as one JSON line.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig, type Config } from '../../config';
import { setLogLevel } from '../../log';
import type { NativeAddon, NativeInfo } from '../../native/addon';
import { sampleGpu, sampleSimulatedDevice } from '../../ops/gpu-sampler';
import { loadPack } from '../../packs/pack';
import { verdictsFile } from '../../packs/probe/verdicts';
import { simulatePipeline } from '../../packs/model';
import { loadModels, readWarmUpSample, registryOptions, warmUpAll } from '../../packs/runtime';
import { median } from '../../packs/session-sizes';
import { closedLoop } from '../closed-loop';
import { httpLoad } from '../http-load';
import { ownTotals, windowFigures } from '../stage-scrape';
import { CLIENTS, type ChildReport, type PhotoFigures, type SessionFigures, type Step } from './report';
import { drainBacklog } from './scan-drain';

const SIZES = [1, 2, 4, 8];
const RUNS = 10;

export interface ChildOptions {
  name: string;
  steps: ReadonlySet<Step>;
  photosDir: string;
  answersFile: string | null;
  seconds: number;
  scans: number;
  /** Epoch ms at which the parent ends this child: the scan drain stops waiting a little before. */
  deadline: number;
}

/** The photos of a folder, sorted. */
export function photoFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => /\.(jpe?g|png|webp)$/i.test(f))
    .sort()
    .map((f) => path.join(dir, f));
}

/** The default pack's sessions alone at each size, steady then alternating. */
async function sessionFigures(config: Config, addon: NativeAddon, info: NativeInfo): Promise<SessionFigures[]> {
  const options = registryOptions(config, info);
  const pack = await loadPack(path.join(config.modelsDir, config.defaultModel), { ...options, sessionBatch: SIZES.at(-1)! });
  const pipeline = await addon.createPipeline(pack.spec);
  const out: SessionFigures[] = [];
  try {
    if (options.simulateDevice) await simulatePipeline(addon, pipeline, options.simulateDevice, readWarmUpSample());
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

/** Runs `fn`, its milliseconds in the report's timings under `key`. */
async function timed<T>(report: ChildReport, key: Step, fn: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await fn();
  } finally {
    report.timings[key] = Math.round(performance.now() - started);
  }
}

/** The child: one configuration measured, the steps of `o.steps` in order. */
export async function child(o: ChildOptions): Promise<ChildReport> {
  setLogLevel('warn');
  const config = loadConfig(process.env);
  const report: ChildReport = { name: o.name, env: {}, providers: [], batching: null, sessions: [], photos: null, load: [], http: [], readyMs: null, scans: null, timings: {} };
  const files = photoFiles(o.photosDir);
  const images = files.map((f) => readFileSync(f));
  const started = performance.now();
  const { addon, info, registry } = await loadModels(config, verdictsFile(config.scan.dataDir));
  // A simulated device shows as one, so the verdict and the table say what was measured.
  report.providers = info.simulatedDevice ? [`simulated ${info.simulatedDevice.name}`] : info.providers.filter((p) => p.active).map((p) => p.name);
  if (o.steps.has('sessions')) report.sessions = await timed(report, 'sessions', () => sessionFigures(config, addon, info));
  await warmUpAll(registry);
  report.timings.start = Math.round(performance.now() - started - (report.timings.sessions ?? 0));
  const model = registry.get(config.defaultModel)!;
  const { maxBatchSize, maxInFlight } = model.batcher.options;
  report.batching = { maxBatchSize, maxInFlight, poolThreads: config.poolThreads };
  if (o.steps.has('photos')) {
    report.photos = await timed(report, 'photos', async () => {
      const times: Array<[string, number]> = [];
      const states: Record<string, string> = {};
      for (let pass = 0; pass < 2; pass++) {
        for (const [i, file] of files.entries()) {
          const started = performance.now();
          const analysis = await model.analyze({ data: images[i]!, encoding: 'bytes' }).catch(() => null);
          times.push([path.basename(file), performance.now() - started]);
          states[path.basename(file)] = analysis?.detection ?? 'error';
        }
      }
      const slowest = times.reduce((a, b) => (b[1] > a[1] ? b : a), ['', 0]);
      const photos: PhotoFigures = { count: files.length, maxMs: slowest[1], slowest: slowest[0], p50Ms: median(times.map((t) => t[1])), states, statesEqual: null, compared: 0 };
      if (o.answersFile) {
        const answers = JSON.parse(readFileSync(o.answersFile, 'utf8')) as Record<string, string>;
        const names = Object.keys(states).filter((f) => f in answers);
        photos.compared = names.length;
        photos.statesEqual = names.filter((f) => answers[f] === states[f]).length;
      }
      return photos;
    });
  }
  if (o.steps.has('load')) {
    await timed(report, 'load', async () => {
      for (const clients of CLIENTS) {
        const sampler = info.simulatedDevice ? sampleSimulatedDevice(() => addon.simulatedDevice()) : sampleGpu(config.deviceId);
        const before = ownTotals(model.id);
        const loop = await closedLoop(clients, o.seconds, async (n) => {
          await model.analyze({ data: images[n % images.length]!, encoding: 'bytes' });
          return true;
        });
        report.load.push({ clients, ...loop, ...windowFigures(before, ownTotals(model.id), loop.seconds, loop.requests), gpu: await sampler.stop() });
      }
    });
  }
  await registry.closeAll();
  if (o.steps.has('http')) {
    const served = await timed(report, 'http', () => httpLoad({}, images, CLIENTS, o.seconds, 5 * 60_000));
    report.http = served.levels;
    report.readyMs = served.readyMs;
  }
  if (o.steps.has('scans') && o.scans > 0) {
    // Kept short of the parent's time limit, so that a slow drain still leaves its figures and the others.
    report.scans = await timed(report, 'scans', () => drainBacklog(images, o.scans, config.scan.dataDir, o.deadline - 5_000)).catch((error: unknown) => {
      report.error = `scan drain failed: ${(error as Error).message}`;
      return null;
    });
  }
  return report;
}
