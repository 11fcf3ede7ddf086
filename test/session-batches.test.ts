// Session Runs in fixed batch sizes, through the real addon on CPU: with CATCOMFORT_SESSION_BATCH=8
// a micro-batch of 5 runs as one Run of 8 (3 zero pad rows; each size has a session of its own),
// only 5 results come back, and they equal the unpadded runs of the default CPU setting (one image
// per Run). Warm-up keeps only the sizes that pay. A lone image runs on the low-load session
// (two intra-op threads) and answers the same to the last bit.
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, test } from 'node:test';
import { loadConfig } from '../src/config';
import type { Model } from '../src/packs/model';
import { loadModel, ModelRegistry } from '../src/packs/registry';
import { chooseSizes, RUNS } from '../src/packs/session-sizes';
import { loadModels, lowLoadFor, registryOptions, warmUpAll } from '../src/packs/runtime';
import type { ItemResult, NativeAddon, NativeInfo, NativePipeline, SessionStage } from '../src/native/addon';
import { repoRoot } from './helpers/paths';

const images = ['chelsea.jpg', 'chelsea.webp', 'chelsea_cmyk.jpg', 'chelsea_grey.jpg', 'chelsea_orient6.jpg'].map((name) =>
  readFileSync(path.join(repoRoot, 'test/fixtures', name)),
);

/** models/ with one pack only, its detector on one view (n images are n detector rows), its manifest edited. */
function onePackOneView(edit: (manifest: { detector: Record<string, unknown> }) => void = () => {}, pack = 'bc-v1'): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cc-buckets-'));
  cpSync(path.join(repoRoot, 'models', pack), path.join(dir, pack), { recursive: true });
  const file = path.join(dir, pack, 'manifest.json');
  const manifest = JSON.parse(readFileSync(file, 'utf8'));
  manifest.detector.views = ['half_flip'];
  edit(manifest);
  writeFileSync(file, JSON.stringify(manifest));
  return dir;
}

const env = { ...process.env, CATCOMFORT_MODELS_DIR: onePackOneView(), CATCOMFORT_EXECUTION_PROVIDERS: 'cpu', CATCOMFORT_BATCH_MAX_SIZE: '5', CATCOMFORT_SESSION_BATCH: undefined, CATCOMFORT_LOW_LOAD_THREADS: '2' };
let addon: NativeAddon;
let info: NativeInfo;
let padded: Model;

before(async () => {
  const loaded = await loadModels(loadConfig({ ...env, CATCOMFORT_SESSION_BATCH: '8' }));
  ({ addon, info } = loaded);
  padded = loaded.registry.get('bc-v1')!;
});

/** The five images submitted together: one micro-batch of 5. */
async function analyzeFive(model: Model): Promise<ItemResult[]> {
  const batchesOfFive = model.batcher.stats().batchSizes[5]!;
  const results = await Promise.all(images.map((data) => model.batcher.submit({ data, encoding: 'bytes' })));
  assert.equal(model.batcher.stats().batchSizes[5], batchesOfFive + 1, 'one micro-batch of five');
  return results;
}

/** Results without their timings, which differ from run to run. */
function outcomes(results: ItemResult[]) {
  return results.map((r) => (r.ok ? { ...r, timings: null } : r));
}

test('session batch 8: sizes 1, 2, 4, 8; five images run as 8 with 3 pad rows; five results', async () => {
  const results = await analyzeFive(padded);
  assert.equal(results.length, 5);
  const classified = results.filter((r) => r.ok && r.score !== null).length;
  assert.ok(classified > 0, 'some images reach the classifier');
  const bucket = [1, 2, 4, 8].find((b) => b >= classified)!;
  const expected = (used: number, pad: number) => [1, 2, 4, 8].map((batch) => ({ batch, runs: batch === used ? 1 : 0, padRows: batch === used ? pad : 0, lowLoadRuns: 0 }));
  assert.deepEqual(padded.sessionBatches(), { detector: expected(8, 3), classifier: expected(bucket, bucket - classified) });
});

test('padded results equal unpadded ones (CPU default: one image per Run, no padding)', async () => {
  const config = loadConfig(env);
  assert.equal(config.sessionBatch, null);
  const registry = await ModelRegistry.load(addon, registryOptions(config, info));
  const unpadded = registry.get('bc-v1')!;
  const reference = await analyzeFive(unpadded);
  const sessionBatches = unpadded.sessionBatches();
  assert.deepEqual(sessionBatches.detector, [{ batch: 1, runs: 5, padRows: 0, lowLoadRuns: 0 }]);
  assert.deepEqual(sessionBatches.classifier.map((b) => b.padRows), [0]);
  assert.deepEqual(outcomes(await analyzeFive(padded)), outcomes(reference));
  await registry.closeAll();
});

test('input tensors kept between Runs: concurrent micro-batches answer as single images do', async () => {
  assert.deepEqual(padded.hostMemory(), { detector: 'cpu', classifier: 'cpu' }, 'no GPU provider: plain CPU memory');
  const alone: ItemResult[] = [];
  const lowLoadBefore = padded.sessionBatches().detector[0]!.lowLoadRuns;
  for (const data of images) alone.push(await padded.batcher.submit({ data, encoding: 'bytes' }));
  // One image at a time: its detector Run on the low-load session (two intra-op threads).
  assert.equal(padded.sessionBatches().detector[0]!.lowLoadRuns, lowLoadBefore + images.length);
  const runsBefore = padded.sessionBatches().detector.map((b) => b.runs);
  // Twenty submissions at once: micro-batches of up to five, in flight together, on the kept inputs
  // of every size (Runs of 8 with pad rows after Runs that filled other rows).
  const rounds = await Promise.all(Array.from({ length: 4 }, () => Promise.all(images.map((data) => padded.batcher.submit({ data, encoding: 'bytes' })))));
  // The same answers, to the last bit, as the low-load session gave alone.
  for (const round of rounds) assert.deepEqual(outcomes(round), outcomes(alone));
  const runsAfter = padded.sessionBatches().detector.map((b) => b.runs);
  assert.ok(runsAfter.some((runs, i) => runs > runsBefore[i]! && i > 0), 'some Runs held several images');
});

test('the low-load rule is decided once (CPU only) and the model reports what its pipeline was made with', () => {
  assert.deepEqual(padded.lowLoad, { threads: 2, maxInFlight: 1 }, 'CPU: CATCOMFORT_LOW_LOAD_THREADS');
  const gpu: NativeInfo = { ...info, providers: [{ name: 'cuda', active: true, reason: null }, ...info.providers] };
  assert.deepEqual(lowLoadFor(loadConfig(env), gpu), { threads: 1, maxInFlight: 1 }, 'a GPU provider active: none');
});

test('a session batch that is no power of two is the largest size: 10 -> 1, 2, 4, 8, 10', async () => {
  const registry = await ModelRegistry.load(addon, { ...registryOptions(loadConfig(env), info), sessionBatch: 10 });
  const sizes = registry.get('bc-v1')!.sessionBatches();
  assert.deepEqual(sizes.detector.map((b) => b.batch), [1, 2, 4, 8, 10]);
  assert.deepEqual(sizes.classifier.map((b) => b.batch), [1, 2, 4, 8, 10]);
  await registry.closeAll();
});

test('a detector with a fixed batch (YOLOX-nano as published) runs at that size only', async () => {
  // bc-legacy's YOLOX-nano is published with batch 1; without the dynamicBatch patch it stays fixed.
  const modelsDir = onePackOneView((m) => delete m.detector.dynamicBatch, 'bc-legacy');
  const registry = await ModelRegistry.load(addon, { ...registryOptions(loadConfig({ ...env, CATCOMFORT_MODELS_DIR: modelsDir }), info), sessionBatch: 8 });
  const fixed = registry.get('bc-legacy')!;
  const results = await analyzeFive(fixed);
  assert.equal(results.length, 5);
  assert.deepEqual(fixed.sessionBatches().detector, [{ batch: 1, runs: 5, padRows: 0, lowLoadRuns: 0 }]);
  assert.deepEqual(fixed.sessionBatches().classifier.map((b) => b.batch), [1, 2, 4, 8]);
  await registry.closeAll();
});

test('chooseSizes: a size stays only when it costs at most 0.9x per image of the best smaller size kept and of the size below it; the smallest always', () => {
  const table = chooseSizes([
    { batch: 1, msPerImage: 10 },
    { batch: 2, msPerImage: 9.5 },
    { batch: 4, msPerImage: 5 },
    { batch: 8, msPerImage: 4.6 },
  ]);
  assert.deepEqual(table.map((t) => [t.batch, t.kept]), [[1, true], [2, false], [4, true], [8, false]]);
  assert.deepEqual(chooseSizes([{ batch: 1, msPerImage: 3 }]), [{ batch: 1, msPerImage: 3, kept: true }]);
  // A cost that grows with the batch, a little per-Run overhead (the cpu-like profile): 8 saves 11 %
  // over 1 but almost nothing over 4, and padding 4 crops up to 8 would double their cost.
  const linear = chooseSizes([1, 2, 4, 8].map((batch) => ({ batch, msPerImage: 3 + 0.45 / batch })));
  assert.deepEqual(linear.map((t) => t.kept), [true, false, false, false]);
});

test('warm-up times each size on the warm-up photo and drops a size that does not pay (here one made slow); the rest answer as before', async () => {
  // The real addon, with its Runs at batch 4 reported 50 times slower.
  const slow4 = Object.create(addon, {
    runSession: { value: (p: NativePipeline, stage: SessionStage, batch: number, row?: Float32Array) => addon.runSession(p, stage, batch, row).then((ms) => (batch === 4 ? ms * 50 : ms)) },
  }) as NativeAddon;
  const options = { ...registryOptions(loadConfig(env), info), sessionBatch: 8 };
  const model = await loadModel(slow4, path.join(env.CATCOMFORT_MODELS_DIR, 'bc-v1'), options);
  try {
    await model.warmUp(readFileSync(path.join(repoRoot, 'models/warmup-cat.png')));
    for (const stage of ['detector', 'classifier'] as const) {
      const table = model.sizeTimings()[stage];
      assert.deepEqual(table.map((t) => t.batch), [1, 2, 4, 8], 'every size was timed');
      assert.ok(table.every((t) => t.msPerImage > 0));
      assert.equal(table[0]!.kept, true, 'batch 1 always stays');
      assert.equal(table[2]!.kept, false, 'the slow size is dropped');
      assert.deepEqual(model.sessionBatches()[stage].map((b) => b.batch), table.filter((t) => t.kept).map((t) => t.batch));
    }
    await assert.rejects(addon.runSession((model as unknown as { pipeline: NativePipeline }).pipeline, 'detector', 4), /no session for batch 4/);
    assert.deepEqual(outcomes(await analyzeFive(model)), outcomes(await analyzeFive(padded)));
  } finally {
    await model.close();
  }
});

test('warm-up of several packs: every first Run at once, then each size timed with no other Run in flight', async () => {
  // The real addon, with each runSession call's overlap recorded.
  let inFlight = 0;
  const overlaps: number[] = [];
  const watched = Object.create(addon, {
    runSession: {
      value: async (p: NativePipeline, stage: SessionStage, batch: number, row?: Float32Array) => {
        overlaps.push(++inFlight);
        try {
          return await addon.runSession(p, stage, batch, row);
        } finally {
          inFlight--;
        }
      },
    },
  }) as NativeAddon;
  const modelsDir = onePackOneView();
  cpSync(path.join(repoRoot, 'models', 'bc-legacy'), path.join(modelsDir, 'bc-legacy'), { recursive: true });
  const registry = await ModelRegistry.load(watched, { ...registryOptions(loadConfig({ ...env, CATCOMFORT_MODELS_DIR: modelsDir }), info), sessionBatch: 2 });
  try {
    const ready: string[] = [];
    await warmUpAll(registry, undefined, (id, state) => state === 'ready' && ready.push(id));
    assert.deepEqual(ready.sort(), ['bc-legacy', 'bc-v1']);
    // Two packs x two stages x sizes 1 and 2 (bc-legacy's detector: 1 and 2 with its dynamicBatch patch).
    const sessions = registry.list().reduce((n, m) => n + m.sizeTimings().detector.length + m.sizeTimings().classifier.length, 0);
    assert.equal(sessions, 8);
    assert.deepEqual(overlaps.slice(0, sessions), Array.from({ length: sessions }, (_, i) => i + 1), 'the first Runs all overlap');
    assert.equal(overlaps.length, sessions * (1 + RUNS));
    assert.ok(overlaps.slice(sessions).every((n) => n === 1), 'every timed Run ran alone');
  } finally {
    await registry.closeAll();
  }
});
