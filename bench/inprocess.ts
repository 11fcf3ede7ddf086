// In-process pipeline throughput: the service's ModelRegistry and Model.analyze (with its
// micro-batcher, configured from CATCOMFORT_* like the service), no HTTP. N closed-loop clients
// each submit the next fixture photo as a base64 string (as v2 does) and wait for the answer.
// Then the same with 12 MP phone photos (bench/phone-photos.ts), once with JPEGs decoded at full
// size (a second registry, as before shrink-on-load) and once as the service runs.
// With BENCH_PRECISION_COMPARE (default on) and a pack with an int8 detector, the fixture photos
// are measured at both detector precisions: fp32 first (a second registry when the service's
// precision is int8), then int8; the service's precision's levels are the main ones.
// Run alone: `node dist/bench/inprocess.js [out.json]`.
import { readFileSync, writeFileSync } from 'node:fs';
import { loadConfig } from '../src/config';
import type { Model } from '../src/packs/model';
import { ModelRegistry } from '../src/packs/registry';
import { loadModels, registryOptions } from '../src/packs/runtime';
import { benchOptions, fixturePhotos, fmt, log, percentile, PRECISIONS, type Precision } from './common';
import { sampleGpu, type GpuUtilisation } from '../src/ops/gpu-sampler';
import { phonePhotos } from './phone-photos';

export interface InprocessLevel {
  concurrency: number;
  durationS: number;
  completed: number;
  failed: number;
  rps: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  /** Batch-size histogram of the micro-batcher during the measured window: batchSizes[n] = batches of n. */
  batchSizes: number[];
  /** Mean per-request stage times the pipeline reported (a batch's shared stages count fully for each request in it). */
  stagesMs: { decode: number; detect: number; classify: number };
  /** nvidia-smi's samples during the measured window; null without an NVIDIA GPU. */
  gpu: GpuUtilisation | null;
}

export interface InprocessResult {
  batching: { maxBatchSize: number; maxQueueDelayUs: number; maxQueue: number; maxInFlight: number };
  poolThreads: number;
  intraOpThreads: number;
  photos: number;
  /** The detector precision of `levels` and `phone` (the service's: CATCOMFORT_PRECISION or auto). */
  precision?: Precision;
  levels: InprocessLevel[];
  /**
   * The fixture photos at each detector precision (fp32 measured first); the service's precision's
   * entry is `levels` itself. Absent with BENCH_PRECISION_COMPARE=0; `note` says why it is missing otherwise.
   */
  byPrecision?: { fp32: InprocessLevel[]; int8: InprocessLevel[] } | { note: string };
  /** The phone photos, with a full-size JPEG decode (before) and with shrink-on-load (after). */
  phone: { photos: number; fullSizeDecode: InprocessLevel[]; shrinkOnLoad: InprocessLevel[] };
}

export async function runInprocess(): Promise<InprocessResult> {
  const options = benchOptions();
  const env = { ...process.env, CATCOMFORT_QUEUE_MAX: process.env.CATCOMFORT_QUEUE_MAX ?? String(options.queueMax) };
  const config = loadConfig(env);
  const { addon, info, registry } = await loadModels(config);
  const model = registry.get(config.defaultModel);
  if (!model) throw new Error(`model ${config.defaultModel} not loaded`);
  const photos = fixturePhotos().map((p) => readFileSync(p.path).toString('base64'));
  const warmUpPhoto = readFileSync(fixturePhotos()[0]!.path);
  await model.warmUp(warmUpPhoto);
  const phone = (await phonePhotos()).map((p) => readFileSync(p.path).toString('base64'));
  const base = registryOptions(config, info);

  const result: InprocessResult = {
    batching: { ...model.batcher.options },
    poolThreads: config.poolThreads,
    intraOpThreads: config.intraOpThreads,
    photos: photos.length,
    precision: model.precision,
    levels: [],
    phone: { photos: phone.length, fullSizeDecode: [], shrinkOnLoad: [] },
  };
  if (options.precisionCompare) {
    const byPrecision: Partial<Record<Precision, InprocessLevel[]>> = {};
    // fp32 first, then int8; the service's registry measures its own precision.
    for (const precision of PRECISIONS) {
      if (precision === model.precision) {
        result.levels = await measureLevels(model, photos, `fixture photos, ${precision}`, config.deviceId);
        byPrecision[precision] = result.levels;
        continue;
      }
      const second = await ModelRegistry.load(addon, { ...base, precision, precisionForced: true });
      try {
        const m = second.get(config.defaultModel)!;
        if (m.precision !== precision) {
          result.byPrecision = { note: `the pack has no ${precision} detector (manifest detector.int8)` };
          log(`  in-process: no ${precision} detector in ${config.defaultModel}; fp32 vs int8 not measured`);
          continue;
        }
        await m.warmUp(warmUpPhoto);
        byPrecision[precision] = await measureLevels(m, photos, `fixture photos, ${precision}`, config.deviceId);
      } finally {
        await second.closeAll();
      }
    }
    if (byPrecision.fp32 && byPrecision.int8) result.byPrecision = { fp32: byPrecision.fp32, int8: byPrecision.int8 };
  } else {
    result.levels = await measureLevels(model, photos, `fixture photos, ${model.precision}`, config.deviceId);
  }
  const before = await ModelRegistry.load(addon, { ...base, precision: model.precision, precisionForced: true, jpegShrinkOnLoad: false });
  try {
    result.phone.fullSizeDecode = await measureLevels(before.get(config.defaultModel)!, phone, 'phone photos, full-size decode', config.deviceId);
  } finally {
    await before.closeAll();
  }
  result.phone.shrinkOnLoad = await measureLevels(model, phone, 'phone photos, shrink-on-load', config.deviceId);
  await registry.closeAll();
  return result;
}

/** Closed-loop clients at each in-process concurrency level, sending `images` in turn; GPU `gpuDevice` sampled. */
async function measureLevels(model: Model, images: string[], label: string, gpuDevice: number): Promise<InprocessLevel[]> {
  const options = benchOptions();
  const levels: InprocessLevel[] = [];
  let next = 0;
  const runFor = async (concurrency: number, seconds: number, record: boolean) => {
    const latencies: number[] = [];
    const stages = { decode: 0, detect: 0, classify: 0 };
    let failed = 0;
    const stopAt = performance.now() + seconds * 1000;
    const client = async () => {
      while (performance.now() < stopAt) {
        const image = images[next++ % images.length]!;
        const started = performance.now();
        try {
          const { timings } = await model.analyze({ data: image, encoding: 'base64-strict' });
          if (record) {
            latencies.push(performance.now() - started);
            stages.decode += timings.decodeMs;
            stages.detect += timings.detectMs;
            stages.classify += timings.classifyMs;
          }
        } catch {
          failed++;
        }
      }
    };
    const started = performance.now();
    await Promise.all(Array.from({ length: concurrency }, client));
    const mean = (total: number) => (latencies.length > 0 ? total / latencies.length : NaN);
    const stagesMs = { decode: mean(stages.decode), detect: mean(stages.detect), classify: mean(stages.classify) };
    return { latencies, failed, stagesMs, elapsedS: (performance.now() - started) / 1000 };
  };

  for (const concurrency of options.inprocessConcurrency) {
    log(`  in-process, ${label}, c=${concurrency}: warm-up ${options.warmupS}s, measure ${options.durationS}s`);
    if (options.warmupS > 0) await runFor(concurrency, options.warmupS, false);
    const before = model.batcher.stats().batchSizes;
    const sampler = sampleGpu(gpuDevice);
    const { latencies, failed, stagesMs, elapsedS } = await runFor(concurrency, options.durationS, true);
    const gpu = await sampler.stop();
    const after = model.batcher.stats().batchSizes;
    latencies.sort((a, b) => a - b);
    const level: InprocessLevel = {
      concurrency,
      durationS: elapsedS,
      completed: latencies.length,
      failed,
      rps: latencies.length / elapsedS,
      p50Ms: percentile(latencies, 50),
      p90Ms: percentile(latencies, 90),
      p99Ms: percentile(latencies, 99),
      batchSizes: after.map((n, i) => n - (before[i] ?? 0)),
      stagesMs,
      gpu,
    };
    levels.push(level);
    log(
      `  in-process, ${label}, c=${concurrency}: ${fmt(level.rps)} req/s, p50 ${fmt(level.p50Ms)} ms, p90 ${fmt(level.p90Ms)} ms, p99 ${fmt(level.p99Ms)} ms, failed ${failed}, ` +
        `batch sizes ${level.batchSizes.map((n, i) => (i > 0 && n > 0 ? `${i}:${n}` : '')).filter(Boolean).join(' ')}; ` +
        `stages ms: decode ${fmt(stagesMs.decode, 2)}, detect ${fmt(stagesMs.detect, 2)}, classify ${fmt(stagesMs.classify, 2)}` +
        (gpu ? `; GPU ${fmt(gpu.meanPct)} % mean, ${fmt(gpu.maxPct)} % max` : ''),
    );
  }
  return levels;
}

if (require.main === module) {
  runInprocess().then(
    (result) => {
      const out = process.argv[2];
      if (out) writeFileSync(out, JSON.stringify(result, null, 2));
      else process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      process.exit(0);
    },
    (error: unknown) => {
      process.stderr.write(`in-process benchmark failed: ${(error as Error)?.stack ?? String(error)}\n`);
      process.exit(1);
    },
  );
}
