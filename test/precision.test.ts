// The detector's two precisions: int8 and fp32 agree on the detection state of the 39 fixture
// photos (at most one photo apart per tag, the quality bar of README "Model packs"), and
// CATCOMFORT_PRECISION switches the precision the real service serves and reports.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { loadAddon, type NativeAddon } from '../src/native/addon';
import { loadPack, type Precision } from '../src/models/pack';
import { postJson, request } from './helpers/http';
import { photoEntries, repoRoot } from './helpers/paths';
import { startServer } from './helpers/server';

let addon: NativeAddon;
before(() => {
  addon = loadAddon();
  addon.configure({ providers: ['cpu'], deviceId: 0, trtCacheDir: os.tmpdir(), trtFp16: false, poolThreads: 2, intraOpThreads: 1 });
});

async function states(precision: Precision): Promise<Map<string, string>> {
  const pack = await loadPack(path.join(repoRoot, 'models/bc-v1'), {
    maxPixels: 40_000_000,
    batching: { maxBatchSize: 1, maxQueueDelayUs: 0, maxQueue: 1, maxInFlight: 1 },
    sessionBatch: 1,
    precision,
  });
  assert.equal(pack.precision, precision);
  const pipeline = await addon.createPipeline(pack.spec);
  const out = new Map<string, string>();
  try {
    for (const entry of photoEntries()) {
      const [result] = await addon.analyze(pipeline, [{ data: readFileSync(entry.path), encoding: 'bytes' }]);
      assert.ok(result?.ok, entry.file);
      out.set(entry.file, result.detection);
    }
  } finally {
    addon.releasePipeline(pipeline);
  }
  return out;
}

test('int8 and fp32 agree on the detection state of the fixture photos, within one photo per tag', async () => {
  const [fp32, int8] = [await states('fp32'), await states('int8')];
  const differing = new Map<string, string[]>();
  for (const entry of photoEntries()) {
    if (fp32.get(entry.file) === int8.get(entry.file)) continue;
    differing.set(entry.tag, [...(differing.get(entry.tag) ?? []), `${entry.file}: ${fp32.get(entry.file)} -> ${int8.get(entry.file)}`]);
  }
  for (const [tag, files] of differing) assert.ok(files.length <= 1, `${tag}: ${files.join('; ')}`);
});

let servers: Array<{ stop(): Promise<void> }> = [];
after(() => Promise.all(servers.map((s) => s.stop())));

test('CATCOMFORT_PRECISION: int8 by default on CPU, fp32 when asked; both serve predictions and say which', async () => {
  const [auto, fp32] = await Promise.all([startServer(), startServer({ CATCOMFORT_PRECISION: 'fp32' })]);
  servers = [auto, fp32];
  const image = readFileSync(photoEntries()[0]!.path).toString('base64');
  for (const [server, expected] of [[auto, 'int8'], [fp32, 'fp32']] as const) {
    const models = await request(`${server.url}/v2/models`);
    const v1 = models.body.models.find((m: { id: string }) => m.id === 'bc-v1');
    assert.deepEqual(v1.detector, { precision: expected, available_precisions: ['fp32', 'int8'] });
    const legacy = models.body.models.find((m: { id: string }) => m.id === 'bc-legacy');
    assert.deepEqual(legacy.detector, { precision: 'fp32', available_precisions: ['fp32'] }, 'a pack without int8 serves fp32');
    const predicted = await postJson(`${server.url}/v2/predict`, { image });
    assert.equal(predicted.status, 200);
    assert.equal(predicted.body.detection, 'detected');
    const stats = await request(`${server.url}/v2/stats`);
    assert.equal(stats.body.models['bc-v1'].precision, expected);
  }
});
