// The Focus rewrite (src/graphs/onnx/focus.ts): bit-identical outputs through the real addon on
// CPU, found by structure only, and no Slice left in any graph of the loaded packs.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, test } from 'node:test';
import { summarizeOnnx, withDynamicBatch } from '../src/graphs/onnx/batch';
import { withFocusAsSpaceToDepth } from '../src/graphs/onnx/focus';
import { encodeModel, type OnnxNode, type OnnxTensor } from '../src/graphs/onnx/write';
import { loadPack, readManifest, readModelFile } from '../src/packs/pack';
import { loadAddon, type FloatTensor, type NativeAddon } from '../src/native/addon';
import { photo, repoRoot } from './helpers/paths';

const modelsDir = path.join(repoRoot, 'models');
const INT64_MAX = 2n ** 63n - 1n;
let addon: NativeAddon;

before(() => {
  addon = loadAddon();
  addon.configure({ providers: ['cpu'], deviceId: 0, trtCacheDir: os.tmpdir(), trtFp16: false, poolThreads: 2, intraOpThreads: 1 });
});

function maxAbsDiff(a: FloatTensor[], b: FloatTensor[]): number {
  assert.equal(a.length, b.length);
  let max = 0;
  a.forEach((t, i) => {
    assert.deepEqual(t.dims, b[i]!.dims);
    t.data.forEach((v, k) => (max = Math.max(max, Math.abs(v - b[i]!.data[k]!))));
  });
  return max;
}

function opCounts(model: Buffer): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const op of summarizeOnnx(model).nodeOpTypes) counts[op] = (counts[op] ?? 0) + 1;
  return counts;
}

test("bc-legacy's YOLOX-nano: Focus becomes SpaceToDepth + Gather, outputs bit-identical (batch 2, CPU)", async () => {
  const manifest = await readManifest(path.join(modelsDir, 'bc-legacy'));
  const d = manifest.detector;
  const published = await readModelFile(path.join(modelsDir, 'bc-legacy'), d.file, d.sha256);
  const original = withDynamicBatch(published, d.dynamicBatch!.reshapeFrom, d.dynamicBatch!.reshapeTo);
  const { model: rewritten, rewritten: blocks } = withFocusAsSpaceToDepth(original);
  assert.equal(blocks, 1);

  const before = opCounts(original);
  const after = opCounts(rewritten);
  assert.equal(before.Slice, 8);
  const { Slice: _slices, ...unchanged } = before;
  assert.deepEqual(after, { ...unchanged, Concat: before.Concat! - 1, SpaceToDepth: 1, Gather: 1 });
  // SpaceToDepth's phases (0,0) (0,1) (1,0) (1,1) put in the Concat's order (0,0) (1,0) (0,1) (1,1).
  const order = summarizeOnnx(rewritten).int64Constants.filter((c) => c.values.length === 12);
  assert.deepEqual(order.map((c) => c.values.map(Number)), [[0, 1, 2, 6, 7, 8, 3, 4, 5, 9, 10, 11]]);
  // The Slices' parameters go with them (ONNX Runtime would warn about unused initializers).
  assert.equal(summarizeOnnx(rewritten).initializerCount, summarizeOnnx(original).initializerCount - 5 + 1);

  const spec = { ...d.preprocess, mean: [...d.preprocess.mean] as [number, number, number], std: [...d.preprocess.std] as [number, number, number] };
  const images = await Promise.all(
    ['000_skimage_chelsea.png', '041_ggoni_cats_couch.jpg'].map(async (name) => (await addon.preprocessImage(readFileSync(photo(name)), spec)).tensor),
  );
  const batch: FloatTensor = { name: 'images', dims: [2, 3, d.preprocess.height, d.preprocess.width], data: new Float32Array(images[0]!.data.length * 2) };
  batch.data.set(images[0]!.data);
  batch.data.set(images[1]!.data, images[0]!.data.length);
  const [expected, actual] = await Promise.all([addon.runModel(original, [batch]), addon.runModel(rewritten, [batch])]);
  assert.equal(maxAbsDiff(expected, actual), 0);
});

// A Focus block as another exporter might write it: columns sliced first for some phases, its own
// Concat order, one row Slice shared by two column Slices, an odd channel count.
function focusModel(options: { step?: bigint; concatAxis?: number; sliceAlsoOutput?: boolean } = {}): Buffer {
  const scalar = (name: string, v: bigint): OnnxTensor => ({ name, dims: [1], type: 'int64', data: BigInt64Array.of(v) });
  const slice = (name: string, input: string, start: string, axis: string): OnnxNode => ({
    name,
    opType: 'Slice',
    inputs: [input, start, 'end', axis, 'step'],
    outputs: [name],
    attributes: [],
  });
  // pRC: the pixels at row offset R and column offset C.
  const nodes: OnnxNode[] = [
    slice('even_rows', 'x', 'zero', 'rows'),
    slice('odd_rows', 'x', 'one', 'rows'),
    slice('even_cols', 'x', 'zero', 'cols'),
    slice('p00', 'even_rows', 'zero', 'cols'),
    slice('p01', 'even_rows', 'one', 'cols'),
    slice('p11', 'odd_rows', 'one', 'cols'),
    slice('p10', 'even_cols', 'one', 'rows'),
    { name: 'focus', opType: 'Concat', inputs: ['p11', 'p00', 'p10', 'p01'], outputs: ['y'], attributes: [{ name: 'axis', type: 'int', value: options.concatAxis ?? 1 }] },
  ];
  return encodeModel({
    irVersion: 8,
    opsetVersion: 13,
    producerName: 'test',
    producerVersion: '1',
    docString: '',
    graph: {
      name: 'focus',
      nodes,
      initializers: [
        scalar('zero', 0n),
        scalar('one', 1n),
        scalar('end', INT64_MAX),
        scalar('rows', 2n),
        scalar('cols', -1n),
        scalar('step', options.step ?? 2n),
      ],
      inputs: [{ name: 'x', dims: ['batch', 5, 4, 6] }],
      outputs: [{ name: 'y', dims: ['batch', 20, 2, 3] }, ...(options.sliceAlsoOutput ? [{ name: 'p01', dims: ['batch', 5, 2, 3] }] : [])],
    },
  });
}

test('a Focus block in another layout is found by structure and gives bit-identical outputs', async () => {
  const original = focusModel();
  const { model, rewritten } = withFocusAsSpaceToDepth(original);
  assert.equal(rewritten, 1);
  const summary = summarizeOnnx(model);
  assert.deepEqual(summary.nodeOpTypes, ['SpaceToDepth', 'Gather']);
  // Concat order p11 p00 p10 p01 = SpaceToDepth phases 3 0 2 1, five channels each.
  const phases = [3, 0, 2, 1].flatMap((phase) => [0, 1, 2, 3, 4].map((c) => phase * 5 + c));
  assert.deepEqual(summary.int64Constants.map((c) => c.values.map(Number)), [phases]);
  const x: FloatTensor = { name: 'x', dims: [2, 5, 4, 6], data: Float32Array.from({ length: 240 }, (_, i) => Math.sin(i) * 100) };
  assert.equal(maxAbsDiff(await addon.runModel(original, [x]), await addon.runModel(model, [x])), 0);
});

test('look-alikes are left alone: step 1, Concat on another axis, a Slice output used elsewhere', () => {
  for (const options of [{ step: 1n }, { concatAxis: 2 }, { sliceAlsoOutput: true }]) {
    const original = focusModel(options);
    const { model, rewritten } = withFocusAsSpaceToDepth(original);
    assert.equal(rewritten, 0, JSON.stringify(options, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v)));
    assert.equal(model, original);
  }
});

test('no graph of the loaded packs contains Slice', async () => {
  const packs = readdirSync(modelsDir, { withFileTypes: true }).filter((e) => existsSync(path.join(modelsDir, e.name, 'manifest.json')));
  let checked = 0;
  for (const entry of packs) {
    const dir = path.join(modelsDir, entry.name);
    if ((await readManifest(dir)).disabled) continue;
    const { spec } = await loadPack(dir, { maxPixels: 1, batching: { maxBatchSize: 1, maxQueueDelayUs: 0, maxQueue: 1, maxInFlight: 1 }, sessionBatch: 1 });
    for (const [stage, model] of [['detector', spec.detector.model], ['classifier', spec.classifier.model]] as const) {
      assert.ok(!summarizeOnnx(model).nodeOpTypes.includes('Slice'), `${entry.name} ${stage}`);
      checked++;
    }
  }
  assert.ok(checked >= 4, `graphs checked: ${checked}`);
});
