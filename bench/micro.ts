// Micro-benchmarks (tinybench), in-process through the native addon, configured as the service
// configures it (src/start.ts, CATCOMFORT_* variables):
//   - whole-pipeline analyze() of one JPEG at 640x480, 1920x1080 and 4000x3000 (made at bench
//     time from a fixture photo with the bundled ffmpeg);
//   - 12 MP phone photos (bench/phone-photos.ts) before/after shrink-on-load: analyze() with a
//     full-size JPEG decode and with shrink-on-load, alternating photo by photo;
//   - base64: Node's Buffer.from(s, 'base64') next to the addon's strict decoder;
//   - decode + detector preprocessing per size (addon.benchDecode);
//   - one detector / classifier session Run at batch 1, 2, 4, 8 (addon.runSession);
//   - the detector's session Run at batch 1 with the fp32 and the int8 detector (two pipelines),
//     with the ratio fp32/int8 (BENCH_PRECISION_COMPARE=0 leaves it out);
//   - JSON.parse of a request body per size (what the HTTP layer does before the addon);
//   - with BENCH_MICRO_COMPARE=<pack folder> (a name under the models folder, or a path): the
//     same analyze() calls on that pack and on the default pack, alternating call by call so both
//     see the same machine load, with wall time, the process's CPU time per request and the
//     ratios (e.g. an older version of a pack against the current one).
// Run alone: `node dist/bench/micro.js [out.json]` (after `npm run build:ts`).
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config';
import { loadPack } from '../src/packs/pack';
import { batchingPlanFor, configureAddon, lowLoadFor, precisionFor, sessionBatchFor } from '../src/packs/runtime';
import { describeFailure, loadBenchAddon, type AnalyzeItem, type BenchAddon, type NativePipeline } from '../src/native/addon';
import { ffmpegFor } from '../src/config';
import { benchOptions, fmt, log, photosDir, PRECISIONS, runCommand, SIZE_SOURCE_PHOTO, type Precision } from './common';
import { phonePhotos } from './phone-photos';

export interface MicroRow {
  group: string;
  name: string;
  /** Per-call wall time statistics from tinybench, ms. */
  meanMs: number;
  p50Ms: number;
  p99Ms: number;
  samples: number;
  /** Optional extra columns, e.g. the addon's own timing. */
  note?: string;
  /** fp32-vs-int8 rows: the addon's own session Run p50 per image, ms (what the ratio is made of). */
  runP50Ms?: number;
}

export interface MicroResult {
  config: {
    poolThreads: number;
    intraOpThreads: number;
    providers: string[];
    activeProviders: string[];
    ort: string;
    vips: string;
    /** The detector precision of every row but the fp32-vs-int8 ones (the service's: CATCOMFORT_PRECISION or auto). */
    precision?: Precision;
  };
  rows: MicroRow[];
  missing: string[];
}

const SIZES: Array<[number, number]> = [
  [640, 480],
  [1920, 1080],
  [4000, 3000],
];

interface Stats {
  mean: number;
  p50: number | undefined;
  p99: number | undefined;
  samplesCount?: number;
  samples?: number[];
}

type BenchCtor = typeof import('tinybench', { with: { 'resolution-mode': 'import' } }).Bench;

async function runTasks(
  Bench: BenchCtor,
  timeMs: number,
  group: string,
  tasks: Array<{ name: string; fn: () => unknown; note?: () => string }>,
): Promise<MicroRow[]> {
  const rows: MicroRow[] = [];
  for (const task of tasks) {
    // One Bench per task, so a slow task (a 4000x3000 analyze) gets its own time budget.
    const bench = new Bench({ time: timeMs, iterations: 5, warmupTime: Math.min(500, timeMs), warmupIterations: 2, throws: true });
    bench.add(task.name, task.fn);
    await bench.run();
    const result = bench.tasks[0]!.result;
    if (!result) throw new Error(`tinybench gave no result for ${task.name}`);
    const latency = result.latency as unknown as Stats;
    const row: MicroRow = {
      group,
      name: task.name,
      meanMs: latency.mean,
      p50Ms: latency.p50 ?? NaN,
      p99Ms: latency.p99 ?? NaN,
      samples: latency.samplesCount ?? latency.samples?.length ?? 0,
    };
    const note = task.note?.();
    if (note) row.note = note;
    rows.push(row);
    log(`  ${group} | ${task.name}: mean ${fmt(row.meanMs, 3)} ms, p50 ${fmt(row.p50Ms, 3)} ms, p99 ${fmt(row.p99Ms, 3)} ms (${row.samples} runs)${note ? `; ${note}` : ''}`);
  }
  return rows;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.floor(sorted.length / 2)]!;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

/**
 * analyze() of one item on each pack in turn, round after round, for about timeMs per pack:
 * both packs run under the same machine load. CPU time is the whole process's (user + system,
 * every thread: the addon's pool and ONNX Runtime), divided by the calls.
 */
async function comparePacks(
  addon: BenchAddon,
  packs: Array<{ label: string; pipeline: NativePipeline }>,
  images: Array<{ label: string; jpeg: Buffer }>,
  timeMs: number,
): Promise<MicroRow[]> {
  const rows: MicroRow[] = [];
  const group = `analyze, packs side by side (alternating calls, 1 item, JPEG bytes; baseline ${packs[0]!.label})`;
  for (const img of images) {
    const item: AnalyzeItem[] = [{ data: img.jpeg, encoding: 'bytes' }];
    const stats = packs.map(() => ({ wall: [] as number[], detect: [] as number[], cpuMs: 0 }));
    for (let warm = 0; warm < 3; warm++) for (const p of packs) await addon.analyze(p.pipeline, item);
    const deadline = performance.now() + timeMs * packs.length;
    for (let round = 0; round < 10 || performance.now() < deadline; round++) {
      for (const [i, p] of packs.entries()) {
        const cpu = process.cpuUsage();
        const started = performance.now();
        const [r] = await addon.analyze(p.pipeline, item);
        const wall = performance.now() - started;
        const used = process.cpuUsage(cpu);
        if (!r!.ok) throw new Error(`${p.label}: ${describeFailure(r!)}`);
        stats[i]!.wall.push(wall);
        stats[i]!.detect.push(r!.timings.detectMs);
        stats[i]!.cpuMs += (used.user + used.system) / 1000;
      }
    }
    const base = stats[0]!;
    const cpuPer = (s: (typeof stats)[number]) => s.cpuMs / s.wall.length;
    packs.forEach((p, i) => {
      const s = stats[i]!;
      let note = `CPU ${fmt(cpuPer(s), 2)} ms/request; addon preprocess+detect p50 ${fmt(median(s.detect), 2)} ms`;
      if (i > 0) {
        note +=
          `; vs ${packs[0]!.label}: CPU ${fmt(cpuPer(s) / cpuPer(base), 2)}x, wall p50 ${fmt(median(s.wall) / median(base.wall), 2)}x, ` +
          `preprocess+detect p50 ${fmt(median(s.detect) / median(base.detect), 2)}x`;
      }
      const row: MicroRow = { group, name: `${img.label} ${p.label}`, meanMs: s.wall.reduce((a, b) => a + b, 0) / s.wall.length, p50Ms: median(s.wall), p99Ms: percentile(s.wall, 0.99), samples: s.wall.length, note };
      rows.push(row);
      log(`  ${group} | ${row.name}: p50 ${fmt(row.p50Ms, 3)} ms (${row.samples} runs); ${note}`);
    });
  }
  return rows;
}

const PHONE_GROUP = '12 MP phone photos, analyze() one at a time: before/after shrink-on-load';

/**
 * Every phone photo through the full-size-decode pipeline and the shrink-on-load pipeline in
 * turn (same photo, back to back, so both see the same machine load), `passes` times over the set.
 */
async function phoneBeforeAfter(addon: BenchAddon, before: NativePipeline, after: NativePipeline, photos: Buffer[], passes: number): Promise<MicroRow[]> {
  const runs = { before: [] as number[], after: [] as number[] };
  const decode = { before: [] as number[], after: [] as number[] };
  for (let pass = 0; pass < passes; pass++) {
    for (const data of photos) {
      for (const [which, pipeline] of [['before', before], ['after', after]] as const) {
        const started = performance.now();
        const [r] = await addon.analyze(pipeline, [{ data, encoding: 'bytes' }]);
        runs[which].push(performance.now() - started);
        if (!r!.ok) throw new Error(describeFailure(r!));
        decode[which].push(r!.timings.decodeMs);
      }
    }
  }
  const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
  const row = (name: string, which: 'before' | 'after', note: string): MicroRow => {
    const sorted = [...runs[which]].sort((a, b) => a - b);
    return { group: PHONE_GROUP, name, meanMs: mean(sorted), p50Ms: median(sorted), p99Ms: sorted[Math.ceil(0.99 * sorted.length) - 1]!, samples: sorted.length, note };
  };
  const rows = [
    row('full-size decode (before)', 'before', `addon decode p50 ${fmt(median(decode.before), 2)} ms`),
    row('shrink-on-load (after)', 'after', `addon decode p50 ${fmt(median(decode.after), 2)} ms (incl. finer decodes for small cats); ` +
      `throughput after/before: ${fmt(mean(runs.before) / mean(runs.after), 2)}x`),
  ];
  for (const r of rows) log(`  ${PHONE_GROUP} | ${r.name}: mean ${fmt(r.meanMs, 1)} ms, p50 ${fmt(r.p50Ms, 1)} ms; ${r.note}`);
  return rows;
}

const PRECISION_GROUP = 'detector Run per image, fp32 vs int8 (runSession, batch 1, zeroed input)';

/** The detector session Run at batch 1 on each precision's pipeline (fp32, then int8), with the ratio fp32/int8 of the Run p50. */
async function detectorByPrecision(Bench: BenchCtor, timeMs: number, addon: BenchAddon, pipelines: Map<Precision, NativePipeline>): Promise<MicroRow[]> {
  const runs = new Map<Precision, number[]>(PRECISIONS.map((p) => [p, []]));
  for (const [, p] of pipelines) await addon.runSession(p, 'detector', 1); // first Run of a session is slow
  const rows = await runTasks(
    Bench,
    timeMs,
    PRECISION_GROUP,
    PRECISIONS.map((precision) => ({
      name: precision,
      fn: async () => {
        runs.get(precision)!.push(await addon.runSession(pipelines.get(precision)!, 'detector', 1));
      },
    })),
  );
  const p50 = (precision: Precision) => median(runs.get(precision)!);
  for (const row of rows) {
    const precision = row.name as Precision;
    row.runP50Ms = p50(precision);
    row.note = `Run p50 ${fmt(p50(precision), 2)} ms/image` + (precision === 'int8' ? `; fp32/int8: ${fmt(p50('fp32') / p50('int8'), 2)}x` : '');
  }
  log(`  ${PRECISION_GROUP}: fp32 ${fmt(p50('fp32'), 2)} ms, int8 ${fmt(p50('int8'), 2)} ms, fp32/int8 ${fmt(p50('fp32') / p50('int8'), 2)}x`);
  return rows;
}

export async function runMicro(): Promise<MicroResult> {
  const options = benchOptions();
  const { Bench } = await import('tinybench');
  const config = loadConfig();
  const { addon, info } = configureAddon(config, loadBenchAddon());
  const limits = { maxPixels: config.maxPixels, batching: batchingPlanFor(config, info).batching, sessionBatch: sessionBatchFor(config, info), lowLoad: lowLoadFor(config, info) };
  const packDir = path.join(config.modelsDir, config.defaultModel);
  const pack = await loadPack(packDir, { ...limits, precision: precisionFor(config, info) });
  const pipeline: NativePipeline = await addon.createPipeline(pack.spec);
  const result: MicroResult = {
    config: {
      poolThreads: config.poolThreads,
      intraOpThreads: config.intraOpThreads,
      providers: config.providers,
      activeProviders: info.providers.filter((p) => p.active).map((p) => p.name),
      ort: info.ortVersion,
      vips: info.vipsVersion,
      precision: pack.precision,
    },
    rows: [],
    missing: [],
  };

  const work = mkdtempSync(path.join(os.tmpdir(), 'catcomfort-bench-'));
  try {
    // 1. Test images at three sizes from one fixture photo.
    const ffmpeg = ffmpegFor('the micro-benchmarks (their test JPEGs)');
    const source = path.join(photosDir, SIZE_SOURCE_PHOTO);
    const images: Array<{ label: string; jpeg: Buffer; base64: string; body: string }> = [];
    for (const [w, h] of SIZES) {
      const out = path.join(work, `${w}x${h}.jpg`);
      await runCommand(ffmpeg, ['-hide_banner', '-loglevel', 'error', '-y', '-i', source, '-vf', `scale=${w}:${h}`, '-q:v', '3', out], { label: 'ffmpeg' });
      const jpeg = readFileSync(out);
      const base64 = jpeg.toString('base64');
      images.push({ label: `${w}x${h}`, jpeg, base64, body: JSON.stringify({ image: base64 }) });
      log(`  made ${w}x${h} JPEG: ${(jpeg.length / 1024).toFixed(0)} KiB`);
    }
    const t = options.microTimeMs;

    // 2. Whole pipeline, one item per analyze() call (what one request costs with no batching).
    const sanity = await addon.analyze(pipeline, [{ data: images[0]!.jpeg, encoding: 'bytes' }]);
    if (!sanity[0]!.ok) throw new Error(`analyze failed on the test JPEG: ${JSON.stringify(sanity[0])}`);
    const stageNotes = new Map<string, number[][]>();
    result.rows.push(
      ...(await runTasks(
        Bench,
        t,
        'analyze (whole pipeline, 1 item, JPEG bytes)',
        images.map((img) => {
          const stages: number[][] = [];
          stageNotes.set(img.label, stages);
          return {
            name: img.label,
            fn: async () => {
              const [r] = await addon.analyze(pipeline, [{ data: img.jpeg, encoding: 'bytes' }]);
              if (!r!.ok) throw new Error(describeFailure(r!));
              stages.push([r!.timings.decodeMs, r!.timings.detectMs, r!.timings.classifyMs]);
            },
            note: () => {
              const s = stages;
              return `addon stages p50: decode ${fmt(median(s.map((x) => x[0]!)), 2)} ms, preprocess+detect ${fmt(median(s.map((x) => x[1]!)), 2)} ms, classify ${fmt(median(s.map((x) => x[2]!)), 2)} ms`;
            },
          };
        }),
      )),
    );
    const phone = (await phonePhotos()).map((p) => readFileSync(p.path));
    const fullSize = await addon.createPipeline({ ...pack.spec, jpegShrinkOnLoad: false });
    try {
      result.rows.push(...(await phoneBeforeAfter(addon, fullSize, pipeline, phone, 2)));
    } finally {
      addon.releasePipeline(fullSize);
    }
    result.rows.push(
      ...(await runTasks(Bench, t, 'analyze (whole pipeline, 1 item, base64-strict string)', [
        {
          name: images[0]!.label,
          fn: async () => {
            const [r] = await addon.analyze(pipeline, [{ data: images[0]!.base64, encoding: 'base64-strict' }]);
            if (!r!.ok) throw new Error(describeFailure(r!));
          },
        },
      ])),
    );

    // 2b. Another pack side by side with the default one (BENCH_MICRO_COMPARE).
    const compare = process.env.BENCH_MICRO_COMPARE?.trim();
    if (compare) {
      const dir = path.isAbsolute(compare) ? compare : path.resolve(config.modelsDir, compare);
      const other = await loadPack(dir, { ...limits, precision: pack.precision });
      const otherPipeline = await addon.createPipeline(other.spec);
      const label = (p: typeof pack) => `${p.manifest.id} ${p.manifest.version} (${p.spec.detector.output.format}, ${p.spec.detector.views.join('+')})`;
      try {
        result.rows.push(
          ...(await comparePacks(
            addon,
            [
              { label: label(other), pipeline: otherPipeline },
              { label: label(pack), pipeline },
            ],
            images,
            t,
          )),
        );
      } finally {
        addon.releasePipeline(otherPipeline);
      }
    }

    // 3. Base64. Node's decoder is the reference; the addon's strict decoder is timed through
    //    benchDecode on base64 of random bytes of the JPEG's length (the base64 decodes, the image
    //    sniff then fails at once), next to the same call with the raw bytes (call overhead).
    const b64Tasks: Array<{ name: string; fn: () => unknown; note?: () => string }> = [];
    for (const img of images) {
      b64Tasks.push({ name: `${img.label} (${(img.base64.length / 1024).toFixed(0)} KiB): Node Buffer.from(s, 'base64')`, fn: () => Buffer.from(img.base64, 'base64') });
      {
        const noise = randomBytes(img.jpeg.length);
        const noiseB64 = noise.toString('base64');
        const strictItem: AnalyzeItem[] = [{ data: noiseB64, encoding: 'base64-strict' }];
        const rawItem: AnalyzeItem[] = [{ data: noise, encoding: 'bytes' }];
        b64Tasks.push({ name: `${img.label}: addon strict base64 (benchDecode, decode fails after base64)`, fn: () => addon.benchDecode(pipeline, strictItem) });
        b64Tasks.push({ name: `${img.label}: addon call overhead (same call, raw bytes)`, fn: () => addon.benchDecode(pipeline, rawItem) });
      }
    }
    result.rows.push(...(await runTasks(Bench, Math.min(t, 800), 'base64 decode', b64Tasks)));

    // 4. JSON.parse of a request body (done by the HTTP layer on the event loop).
    result.rows.push(
      ...(await runTasks(
        Bench,
        Math.min(t, 800),
        'JSON.parse of the request body',
        images.map((img) => ({ name: `${img.label} (${(img.body.length / 1024).toFixed(0)} KiB body)`, fn: () => JSON.parse(img.body) })),
      )),
    );

    // 5. Decode + detector preprocessing (all views), per size.
    {
      const tasks: Array<{ name: string; fn: () => unknown; note?: () => string }> = [];
      for (const img of images) {
        for (const encoding of ['bytes', 'base64-strict'] as const) {
          const items: AnalyzeItem[] = [{ data: encoding === 'bytes' ? img.jpeg : img.base64, encoding }];
          const decode: number[] = [];
          const pre: number[] = [];
          tasks.push({
            name: `${img.label} ${encoding === 'bytes' ? 'JPEG bytes' : 'base64 string'}`,
            fn: async () => {
              const [timing] = await addon.benchDecode(pipeline, items);
              if (!timing!.ok) throw new Error('benchDecode failed');
              decode.push(timing!.decodeMs);
              pre.push(timing!.preprocessMs);
            },
            note: () => `addon p50: decode ${fmt(median(decode), 2)} ms + preprocess (${pack.manifest.detector.views.join('+')}) ${fmt(median(pre), 2)} ms`,
          });
        }
      }
      result.rows.push(...(await runTasks(Bench, t, 'decode + detector preprocess (benchDecode)', tasks)));
    }

    // 6. Sessions at batch 1/2/4/8 on zeroed input: a pipeline of the pack with session batch 8,
    // which has a session for each of these sizes (one input shape per session).
    const sized = await addon.createPipeline((await loadPack(packDir, { ...limits, sessionBatch: 8, precision: pack.precision })).spec);
    try {
      const tasks: Array<{ name: string; fn: () => unknown; note?: () => string }> = [];
      for (const stage of ['detector', 'classifier'] as const) {
        for (const batch of [1, 2, 4, 8]) {
          const runs: number[] = [];
          try {
            await addon.runSession(sized, stage, batch);
          } catch (error) {
            result.missing.push(`${stage} at batch ${batch}: ${(error as Error).message}`);
            continue;
          }
          tasks.push({
            name: `${stage} batch ${batch}`,
            fn: async () => {
              runs.push(await addon.runSession(sized, stage, batch));
            },
            note: () => `Run p50 ${fmt(median(runs), 2)} ms = ${fmt(median(runs) / batch, 2)} ms/image`,
          });
        }
      }
      result.rows.push(...(await runTasks(Bench, t, `session Run, zeroed input (runSession), ${pack.precision} detector`, tasks)));
    } finally {
      addon.releasePipeline(sized);
    }

    // 7. The detector's Run at batch 1 at each precision: one pipeline per precision, fp32 first.
    if (options.precisionCompare) {
      const pipelines = new Map<Precision, NativePipeline>([[pack.precision, pipeline]]);
      const made: NativePipeline[] = [];
      try {
        for (const precision of PRECISIONS) {
          if (pipelines.has(precision)) continue;
          const other = await loadPack(packDir, { ...limits, precision });
          if (other.precision !== precision) {
            result.missing.push(`detector Run at ${precision}: the pack has no ${precision} detector (manifest detector.int8)`);
            continue;
          }
          const p = await addon.createPipeline(other.spec);
          made.push(p);
          pipelines.set(precision, p);
        }
        if (pipelines.size === PRECISIONS.length) result.rows.push(...(await detectorByPrecision(Bench, t, addon, pipelines)));
      } finally {
        for (const p of made) addon.releasePipeline(p);
      }
    }
  } finally {
    addon.releasePipeline(pipeline);
    rmSync(work, { recursive: true, force: true });
  }
  return result;
}

export function microMarkdown(result: MicroResult): string {
  const lines: string[] = [];
  const c = result.config;
  lines.push(
    `Addon: ONNX Runtime ${c.ort}, libvips ${c.vips}; providers ${c.activeProviders.join(',')}; pool threads ${c.poolThreads}, intra-op threads ${c.intraOpThreads}` +
      `${c.precision ? `; detector ${c.precision} (all rows but "fp32 vs int8")` : ''}. ` +
      'Wall time per call from tinybench (ms); "note" has the addon\'s own stage timings.',
  );
  lines.push('');
  let group = '';
  for (const row of result.rows) {
    if (row.group !== group) {
      group = row.group;
      lines.push('', `**${group}**`, '', '| case | mean ms | p50 ms | p99 ms | runs | note |', '|---|---:|---:|---:|---:|---|');
    }
    lines.push(`| ${row.name} | ${fmt(row.meanMs, 3)} | ${fmt(row.p50Ms, 3)} | ${fmt(row.p99Ms, 3)} | ${row.samples} | ${row.note ?? ''} |`);
  }
  if (result.missing.length > 0) {
    lines.push('', 'Not measured:', ...result.missing.map((m) => `- ${m}`));
  }
  return lines.join('\n');
}

if (require.main === module) {
  runMicro().then(
    (result) => {
      const out = process.argv[2];
      if (out) writeFileSync(out, JSON.stringify(result, null, 2));
      else process.stdout.write(`${microMarkdown(result)}\n`);
      process.exit(0);
    },
    (error: unknown) => {
      process.stderr.write(`micro-benchmarks failed: ${(error as Error)?.stack ?? String(error)}\n`);
      process.exit(1);
    },
  );
}
