// train-head: the logistic fit and model selection on synthetic embeddings, the backbone cut, and
// end-to-end CLI runs on real photos: the default (ImageNet backbone) pack, a few kilobytes that a
// real server lists as trained and serves, and refuses once its base's backbone changes; and the
// detector-stage pack.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadPack, readManifest } from '../src/packs/pack';
import { loadAddon } from '../src/native/addon';
import { buildBackbone } from '../src/train/backbone';
import { composeClassifier } from '../src/train/compose';
import {
  balancedAccuracy,
  bestThreshold,
  confusion,
  crossValidateLambda,
  seededRandom,
  stratifiedSplit,
} from '../src/train/evaluate';
import { fitLogistic, predict } from '../src/train/logistic';
import { request, postJson } from './helpers/http';
import { photo, repoRoot } from './helpers/paths';
import { startServer, type TestServer } from './helpers/server';

/** Rows of d Gaussian features (Box-Muller), label 1 where direction . x + noise > 0. */
function synthetic(n: number, d: number, direction: number[], noise: number, seed: number) {
  const random = seededRandom(seed);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  const x: Float64Array[] = [];
  const y: number[] = [];
  for (let i = 0; i < n; i++) {
    // Features on different scales and offsets: the fit standardises them itself.
    const row = Float64Array.from({ length: d }, (_, j) => gauss() * (j + 1) + 3 * j);
    const z = direction.reduce((s, w, j) => s + (w * (row[j]! - 3 * j)) / (j + 1), 0);
    x.push(row);
    y.push(z + noise * gauss() > 0 ? 1 : 0);
  }
  return { x, y };
}

describe('logistic head on synthetic embeddings', () => {
  const d = 30;
  const direction = Array.from({ length: d }, (_, j) => (j === 0 ? 2 : j === 1 ? -1 : 0));

  test('recovers a known linear separation: held-out accuracy and the direction of the weights', () => {
    const train = synthetic(300, d, direction, 0.1, 1);
    const test = synthetic(500, d, direction, 0, 2);
    const head = fitLogistic(train.x, train.y, { lambda: 1e-3 });
    const scores = test.x.map((row) => predict(head, row));
    assert.ok(balancedAccuracy(confusion(test.y, scores, 0.5)) > 0.95);
    // In standardised units the weights point along `direction`.
    const w = Array.from(head.weights, (v, j) => v * (j + 1));
    const cos = w.reduce((s, v, j) => s + v * direction[j]!, 0) / Math.hypot(...w) / Math.hypot(...direction);
    assert.ok(cos > 0.95, `cosine ${cos}`);
  });

  test('cross-validation picks little L2 for a clean separation and much for labels unrelated to the features', () => {
    const clean = synthetic(120, d, direction, 0, 3);
    assert.ok(crossValidateLambda(clean.x, clean.y, 1).lambda <= 0.01);
    const random = seededRandom(4);
    const noise = synthetic(120, d, direction, 0, 5);
    const shuffled = noise.y.map(() => (random() < 0.5 ? 1 : 0));
    assert.ok(crossValidateLambda(noise.x, shuffled, 1).lambda >= 1);
  });

  test('fitting rejects a single class', () => {
    assert.throws(() => fitLogistic([Float64Array.of(1), Float64Array.of(2)], [1, 1], { lambda: 1 }), /both classes/);
  });
});

describe('split and threshold', () => {
  test('the split is stratified and fixed by the seed', () => {
    const labels = [...Array(12).fill(0), ...Array(8).fill(1)] as number[];
    const a = stratifiedSplit(labels, 0.25, 7);
    assert.deepEqual(stratifiedSplit(labels, 0.25, 7), a);
    assert.notDeepEqual(stratifiedSplit(labels, 0.25, 8), a);
    assert.equal(a.validation.filter((i) => labels[i] === 0).length, 3);
    assert.equal(a.validation.filter((i) => labels[i] === 1).length, 2);
    assert.equal(a.train.length + a.validation.length, 20);
  });

  test('the threshold maximises balanced accuracy', () => {
    const labels = [0, 0, 0, 0, 1, 1];
    const scores = [0.1, 0.2, 0.3, 0.4, 0.35, 0.9];
    const best = bestThreshold(labels, scores);
    assert.equal(best.balancedAccuracy, 1 - 1 / 8);
    assert.ok(best.threshold > 0.3 && best.threshold <= 0.35);
  });
});

describe('backbone cut of the bc-v1 SSD', () => {
  test('same bytes every time; one embedding row of 1280 channels per image; backbone + head composed', async () => {
    const base = await readManifest(path.join(repoRoot, 'models/bc-v1'));
    const a = buildBackbone(base, 'conv-1280', 224, repoRoot);
    assert.deepEqual(buildBackbone(base, 'conv-1280', 224, repoRoot).onnx, a.onnx);
    assert.equal(a.channels, 1280);
    const addon = loadAddon();
    addon.configure({ providers: ['cpu'], deviceId: 0, trtCacheDir: os.tmpdir(), trtFp16: false, poolThreads: 2, intraOpThreads: 1 });
    const input = a.graph.inputs[0]!.name;
    const data = new Float32Array(2 * 224 * 224 * 3).map((_, i) => ((i % 255) / 127.5) - 1);
    const [out] = await addon.runModel(a.onnx, [{ name: input, dims: [2, 224, 224, 3], data }]);
    assert.deepEqual(out!.dims, [2, 1280]);
    // After RELU6 and a mean: every value in [0, 6].
    assert.ok(out!.data.every((v) => v >= 0 && v <= 6));

    // The composed classifier is the head applied to that embedding.
    const random = seededRandom(9);
    const head = { weights: Float64Array.from({ length: 1280 }, () => random() - 0.5), bias: -0.3, lambda: 1, iterations: 0 };
    const [score] = await addon.runModel(composeClassifier(a, head, 'test'), [{ name: input, dims: [2, 224, 224, 3], data }]);
    assert.deepEqual(score!.dims, [2, 1]);
    for (const row of [0, 1]) {
      const expected = predict(head, Float64Array.from(out!.data.subarray(row * 1280, (row + 1) * 1280)));
      assert.ok(Math.abs(score!.data[row]! - expected) < 1e-5, `${score!.data[row]} vs ${expected}`);
    }
  });
});

function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(repoRoot, 'dist/src/cli/train-head.js'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

describe('train-head CLI end to end', () => {
  const DISCOMFORT = ['004_oxford_Persian_163.jpg', '005_oxford_British_Shorthair_139.jpg', '006_oxford_Maine_Coon_144.jpg', '007_oxford_Siamese_151.jpg'];
  const COMFORT = ['018_oxford_Abyssinian_13.jpg', '019_oxford_Bengal_109.jpg', '020_oxford_Egyptian_Mau_10.jpg', '021_oxford_British_Shorthair_113.jpg'];
  const NO_CAT = '111_skimage_coffee.png';
  let tmp: string;
  let csv: string;
  let server: TestServer | undefined;
  let first: { code: number; stdout: string; stderr: string };

  before(async () => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'train-head-'));
    csv = path.join(tmp, 'labels.csv');
    const lines = ['path,label', ...DISCOMFORT.map((f) => `${photo(f)},discomfort`), ...[...COMFORT, NO_CAT].map((f) => `${photo(f)},comfort`)];
    writeFileSync(csv, `${lines.join('\n')}\n`);
    // v1 needs bc-v1 and bc-legacy beside the new pack.
    for (const id of ['bc-v1', 'bc-legacy']) cpSync(path.join(repoRoot, 'models', id), path.join(tmp, 'models', id), { recursive: true });
    first = await runCli(['--data', csv, '--out', path.join(tmp, 'models/proxy-head'), '--cache', path.join(tmp, 'cache')]);
  });

  after(async () => {
    await server?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  test('writes a head-only pack with the counts, skips the photo without a cat, and says so', async () => {
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stderr, new RegExp(`skipped .*${NO_CAT.replace('.', '\\.')}: no cat detected`));
    assert.match(first.stdout, /pack proxy-head written/);
    const dir = path.join(tmp, 'models/proxy-head');
    const manifest = await readManifest(dir);
    const t = manifest.classifier.training!;
    assert.equal(manifest.classifier.reference, false);
    // The head and its manifest only: the backbone, detector and verifier come from bc-v1.
    assert.deepEqual(readdirSync(dir).sort(), ['MODEL_CARD.md', 'head.json', 'manifest.json']);
    assert.ok(readdirSync(dir).every((f) => statSync(path.join(dir, f)).size < 64 * 1024));
    assert.equal(manifest.filesFrom, 'bc-v1');
    const base = await readManifest(path.join(tmp, 'models/bc-v1'));
    assert.ok('backbone' in manifest.classifier && 'backbone' in base.classifier);
    assert.equal(manifest.classifier.backbone.sha256, base.classifier.backbone.sha256);
    assert.deepEqual(t.backbone, { stage: 'imagenet-mobilenetv2', inputSize: 224, sha256: base.classifier.backbone.int8.sha256 });
    assert.deepEqual(manifest.verifier, base.verifier);
    assert.equal(t.counts.skipped, 1);
    assert.equal(t.counts.train.comfort + t.counts.validation.comfort, 4);
    assert.equal(t.counts.train.discomfort + t.counts.validation.discomfort, 4);
    assert.equal(manifest.defaultThreshold, t.validation.threshold);
    const card = readFileSync(path.join(tmp, 'models/proxy-head/MODEL_CARD.md'), 'utf8');
    assert.match(card, /exactly as good as the labels/);
    assert.match(card, new RegExp(NO_CAT.replace('.', '\\.')));
  });

  test('a re-run reads every embedding from the cache', async () => {
    const again = await runCli(['--data', csv, '--out', path.join(tmp, 'models/proxy-head'), '--cache', path.join(tmp, 'cache'), '--force']);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /9\/9 \(9 cached, 0 computed, 1 skipped\)/);
  });

  test('the service lists the pack as trained and serves it', async () => {
    server = await startServer({ CATCOMFORT_MODELS_DIR: path.join(tmp, 'models') });
    const list = await request(`${server.url}/v2/models`);
    assert.equal(list.status, 200);
    const summary = list.body.models.find((m: { id: string }) => m.id === 'proxy-head');
    assert.equal(summary.classifier.trained, true);
    assert.equal(summary.classifier.training.training_photos + summary.classifier.training.validation_photos, 8);
    assert.equal(summary.classifier.backbone.name, 'imagenet-mobilenetv2');
    assert.notEqual(summary.verifier, null);
    const reference = list.body.models.find((m: { id: string }) => m.id === 'bc-v1');
    assert.equal(reference.classifier.trained, false);
    assert.equal(reference.classifier.training, null);
    const mean = async (files: string[]) => {
      let sum = 0;
      for (const f of files) {
        const res = await postJson(`${server!.url}/v2/models/proxy-head/predict`, { image: readFileSync(photo(f)).toString('base64') });
        assert.equal(res.status, 200, res.text);
        assert.equal(res.body.detection, 'detected');
        assert.equal(res.body.prediction.threshold, summary.classifier.training.threshold);
        sum += res.body.prediction.score / files.length;
      }
      return sum;
    };
    // The head learnt the labels: face close-ups (labelled discomfort) score above full-body photos.
    assert.ok((await mean(DISCOMFORT)) > (await mean(COMFORT)));
    // The start-up log says it too (the output is complete once the server has stopped).
    await server.stop();
    assert.match(server.output(), /"model":"proxy-head","pack_version":"1.0.0".*"classifier":"trained"/);
    const trainedLine = server.output().split('\n').find((l) => l.includes('model proxy-head: the classifier is a head trained by catcomfort train-head'));
    assert.match(trainedLine ?? '', /"validation_photos":2/);
  });

  test('a head trained on another backbone is refused, naming the file, the two sha256 and the remedy', async () => {
    const copy = path.join(tmp, 'changed');
    cpSync(path.join(tmp, 'models'), copy, { recursive: true });
    const file = path.join(copy, 'proxy-head/manifest.json');
    const manifest = JSON.parse(readFileSync(file, 'utf8'));
    manifest.classifier.backbone.int8.sha256 = 'f'.repeat(64);
    writeFileSync(file, JSON.stringify(manifest));
    const limits = { maxPixels: 1e8, batching: { maxBatchSize: 1, maxQueueDelayUs: 0, maxQueue: 1, maxInFlight: 1 }, sessionBatch: 1, precision: 'int8' as const };
    await assert.rejects(
      loadPack(path.join(copy, 'proxy-head'), limits),
      new RegExp(`made for the classifier backbone mobilenetv2-12\\.int8-7bit\\.onnx with sha256 f{64}, but pack bc-v1 now has one with sha256 [0-9a-f]{64}: retrain the head`),
    );
    rmSync(path.join(copy, 'bc-v1/mobilenetv2-12.int8-7bit.onnx'));
    manifest.classifier.backbone.int8.sha256 = JSON.parse(readFileSync(path.join(copy, 'bc-v1/manifest.json'), 'utf8')).classifier.backbone.int8.sha256;
    writeFileSync(file, JSON.stringify(manifest));
    await assert.rejects(loadPack(path.join(copy, 'proxy-head'), limits), /takes its classifier backbone mobilenetv2-12\.int8-7bit\.onnx from pack bc-v1, but .* is missing/);
  });

  test('--backbone detector writes a pack with its own classifier network and detector files, and no verifier', async () => {
    const out = path.join(tmp, 'models/ssd-head');
    const run = await runCli(['--data', csv, '--out', out, '--cache', path.join(tmp, 'cache'), '--backbone', 'detector']);
    assert.equal(run.code, 0, run.stderr);
    const manifest = await readManifest(out);
    assert.equal(manifest.verifier, undefined);
    assert.equal(manifest.filesFrom, undefined);
    assert.ok(!('backbone' in manifest.classifier));
    assert.equal(manifest.classifier.training!.backbone.stage, 'conv-1280');
    assert.ok(readdirSync(out).includes('classifier.onnx'));
    const usage = await runCli(['--data', csv, '--out', path.join(tmp, 'z'), '--stage', 'expand-576']);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--stage and --size choose a detector stage: they need --backbone detector/);
  });

  test('bad arguments and bad data exit 2 with a message', async () => {
    const missing = await runCli(['--out', path.join(tmp, 'x')]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--data is required/);
    const bad = path.join(tmp, 'bad.csv');
    writeFileSync(bad, `${photo(COMFORT[0]!)},happy\n`);
    const badLabel = await runCli(['--data', bad, '--out', path.join(tmp, 'y')]);
    assert.equal(badLabel.code, 2);
    assert.match(badLabel.stderr, /line 1: expected "path,label"/);
  });
});
