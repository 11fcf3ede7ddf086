// The micro-benchmark binding (build/Release/catcomfort_bench.node), in a process of its own: the
// service's surface plus benchDecode (decode + detector preprocessing, no session runs).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { loadPack } from '../src/packs/pack';
import { loadBenchAddon } from '../src/native/addon';
import { photo, repoRoot } from './helpers/paths';

test('benchDecode times decode and preprocessing per item; failed items have ok false', async () => {
  const addon = loadBenchAddon();
  addon.configure({ providers: ['cpu'], deviceId: 0, trtCacheDir: os.tmpdir(), trtFp16: false, poolThreads: 2, intraOpThreads: 1 });
  const pack = await loadPack(path.join(repoRoot, 'models/bc-v1'), {
    maxPixels: 40_000_000,
    batching: { maxBatchSize: 1, maxQueueDelayUs: 0, maxQueue: 1, maxInFlight: 1 },
    sessionBatch: 1,
  });
  const pipeline = await addon.createPipeline(pack.spec);
  const chelsea = readFileSync(photo('000_skimage_chelsea.png'));
  try {
    const timings = await addon.benchDecode(pipeline, [
      { data: chelsea, encoding: 'bytes' },
      { data: chelsea.toString('base64'), encoding: 'base64-strict' },
      { data: 'a', encoding: 'base64-lenient' },
    ]);
    assert.equal(timings.length, 3);
    for (const t of timings.slice(0, 2)) assert.ok(t.ok && t.decodeMs > 0 && t.preprocessMs > 0, JSON.stringify(t));
    assert.deepEqual(timings[2], { ok: false, decodeMs: 0, preprocessMs: 0 });
    assert.deepEqual(await addon.benchDecode(pipeline, []), []);
    // The rest of the surface is the service's: an analysis through the same binding.
    const [r] = await addon.analyze(pipeline, [{ data: chelsea, encoding: 'bytes' }]);
    assert.ok(r?.ok && r.detection === 'detected');
  } finally {
    addon.releasePipeline(pipeline);
  }
  const released = await addon.createPipeline(pack.spec);
  addon.releasePipeline(released);
  await assert.rejects(addon.benchDecode(released, []), (e: Error & { code?: string }) => e.code === 'native_error' && /released/.test(e.message));
});
