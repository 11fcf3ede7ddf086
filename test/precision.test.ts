// The two precisions: int8 and fp32 give the 39 fixture photos the same detection states,
// CATCOMFORT_PRECISION switches the precision the real service serves and reports, and the int8
// self-check refuses a wrong int8 file (the service then answers as at fp32).
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { loadAddon, type NativeAddon } from '../src/native/addon';
import { sha256 } from '../src/hash';
import { loadPack, type Precision } from '../src/packs/pack';
import { compareAnswers, type PhotoAnswer } from '../src/packs/precision-check';
import { int8FromTable, parseCalibrationTable } from '../src/graphs/quantize/table';
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

test('int8 and fp32 give every fixture photo the same detection state (measured so with and without VNNI)', async () => {
  const [fp32, int8] = [await states('fp32'), await states('int8')];
  const differing = photoEntries()
    .filter((entry) => fp32.get(entry.file) !== int8.get(entry.file))
    .map((entry) => `${entry.file}: ${fp32.get(entry.file)} -> ${int8.get(entry.file)}`);
  assert.deepEqual(differing, []);
});

const servers: Array<{ stop(): Promise<void> }> = [];
after(() => Promise.all(servers.map((s) => s.stop())));

test('CATCOMFORT_PRECISION: int8 by default on CPU, fp32 when asked; both serve predictions and say which', async () => {
  const [auto, fp32] = await Promise.all([startServer(), startServer({ CATCOMFORT_PRECISION: 'fp32' })]);
  servers.push(auto, fp32);
  const image = readFileSync(photoEntries()[0]!.path).toString('base64');
  for (const [server, expected] of [[auto, 'int8'], [fp32, 'fp32']] as const) {
    const models = await request(`${server.url}/v2/models`);
    const v1 = models.body.models.find((m: { id: string }) => m.id === 'bc-v1');
    assert.equal(v1.detector.precision, expected);
    assert.deepEqual(v1.detector.available_precisions, ['fp32', 'int8']);
    assert.match(v1.detector.precision_reason, expected === 'int8' ? /^self-check passed: 4 photos, same states/ : /^CATCOMFORT_PRECISION=fp32$/);
    const legacy = models.body.models.find((m: { id: string }) => m.id === 'bc-legacy');
    const why = expected === 'int8' ? 'the pack has no int8 form' : 'CATCOMFORT_PRECISION=fp32';
    assert.deepEqual(legacy.detector, { precision: 'fp32', available_precisions: ['fp32'], precision_reason: why }, 'a pack without int8 serves fp32');
    const predicted = await postJson(`${server.url}/v2/predict`, { image });
    assert.equal(predicted.status, 200);
    assert.equal(predicted.body.detection, 'detected');
    const stats = await request(`${server.url}/v2/stats`);
    assert.equal(stats.body.models['bc-v1'].precision, expected);
    assert.equal(stats.body.models['bc-v1'].precisionReason, v1.detector.precision_reason);
    assert.ok(Array.isArray(stats.body.models['bc-v1'].cpuFeatures));
  }
});

/** A copy of models/ whose bc-v1 int8 detector is made from a table with every range shrunk to a tenth: wrong answers, right sha256. */
function packWithBadInt8(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cc-bad-int8-'));
  cpSync(path.join(repoRoot, 'models'), dir, { recursive: true });
  const pack = path.join(dir, 'bc-v1');
  const manifest = JSON.parse(readFileSync(path.join(pack, 'manifest.json'), 'utf8'));
  const table = parseCalibrationTable(readFileSync(path.join(pack, manifest.detector.int8.calibration.file), 'utf8'));
  for (const [name, [lo, hi]] of Object.entries(table.ranges)) table.ranges[name] = [lo / 10, hi / 10];
  const bad = int8FromTable(readFileSync(path.join(pack, manifest.detector.file)), table);
  writeFileSync(path.join(pack, manifest.detector.int8.file), bad);
  manifest.detector.int8.sha256 = sha256(bad);
  writeFileSync(path.join(pack, 'manifest.json'), JSON.stringify(manifest));
  return dir;
}

test('int8 self-check: a wrong int8 detector is refused and the pack serves fp32 with its answers; CATCOMFORT_PRECISION=int8 forces it with a warning', async () => {
  const models = packWithBadInt8();
  const [checked, forced, fp32] = await Promise.all([
    startServer({ CATCOMFORT_MODELS_DIR: models }),
    startServer({ CATCOMFORT_MODELS_DIR: models, CATCOMFORT_PRECISION: 'int8' }),
    startServer({ CATCOMFORT_PRECISION: 'fp32' }),
  ]);
  servers.push(checked, forced, fp32);
  const bcV1 = async (url: string) => (await request(`${url}/v2/models`)).body.models.find((m: { id: string }) => m.id === 'bc-v1');

  const refused = await bcV1(checked.url);
  assert.equal(refused.detector.precision, 'fp32');
  assert.match(refused.detector.precision_reason, /^int8 refused: self-check failed on this CPU: reference-\S+ \(.+\): /);
  assert.equal((await request(`${checked.url}/v2/stats`)).body.models['bc-v1'].precision, 'fp32');
  const line = checked
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { msg: string; model?: string; cpu_features?: string[] })
    .filter((l) => l.msg === 'int8 refused: serving fp32');
  assert.equal(line.length, 1, 'one log line');
  assert.equal(line[0]!.model, 'bc-v1@1.3.0');
  assert.ok(Array.isArray(line[0]!.cpu_features));

  for (const entry of photoEntries().filter((e) => /chelsea|darknet_person|coffee/.test(e.file))) {
    const image = readFileSync(entry.path).toString('base64');
    const [a, b] = [await postJson(`${checked.url}/v2/predict`, { image }), await postJson(`${fp32.url}/v2/predict`, { image })];
    assert.equal(a.status, 200);
    assert.deepEqual([a.body.detection, a.body.cat, a.body.prediction], [b.body.detection, b.body.cat, b.body.prediction], entry.file);
  }

  const kept = await bcV1(forced.url);
  assert.equal(kept.detector.precision, 'int8');
  assert.match(kept.detector.precision_reason, /^forced by CATCOMFORT_PRECISION=int8; self-check: self-check failed/);
  assert.match(forced.output(), /int8 self-check did not pass, but CATCOMFORT_PRECISION=int8 forces int8/);
});

test('compareAnswers: a changed state or a score beyond the tolerance is a problem; a small move is not', () => {
  const item = (detection: 'detected' | 'low_confidence', confidence: number, score: number | null): PhotoAnswer => ({
    what: 'cat.png',
    result: { ok: true, width: 1, height: 1, cat: { box: [0, 0, 1, 1], confidence, rawScore: confidence }, detection, score, timings: { decodeMs: 0, detectMs: 0, cropMs: 0, classifyMs: 0, analyzeMs: 0 } },
  });
  const limits = { tolerance: 0.05, scoreTolerance: 0.2 };
  assert.deepEqual(compareAnswers([item('detected', 0.9, 0.5)], [item('detected', 0.93, 0.62)], limits), { problems: [], largest: 0.030000000000000027 });
  assert.deepEqual(compareAnswers([item('detected', 0.7, 0.5)], [item('low_confidence', 0.68, null)], limits).problems, ['cat.png: detected at int8, low_confidence at fp32']);
  assert.match(compareAnswers([item('detected', 0.8, 0.5)], [item('detected', 0.9, 0.5)], limits).problems.join(), /confidence 0\.800 at int8, 0\.900 at fp32 \(differs by 0\.100 > 0\.05\)/);
  assert.match(compareAnswers([item('detected', 0.9, 0.2)], [item('detected', 0.9, 0.5)], limits).problems.join(), /comfort score 0\.200 at int8, 0\.500 at fp32 \(differs by 0\.300 > 0\.2\)/);
});
