// Static int8 quantization (src/graphs/quantize): a quantized Conv, run by the real ONNX Runtime,
// matches its float reference within the error its quantization steps allow; calibration finds
// the ranges the float model produces; the same ranges give the same bytes, and the pack's committed
// table makes exactly the int8 detector its manifest names.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, test } from 'node:test';
import { loadAddon, type FloatTensor, type NativeAddon } from '../src/native/addon';
import { encodeModel, type OnnxModel } from '../src/graphs/onnx/write';
import { calibrate } from '../src/graphs/quantize/calibrate';
import { decodeModel } from '../src/graphs/onnx/read';
import { activationParams, activationTensors, quantizeModel, quantizeWeights, WEIGHT_QMAX } from '../src/graphs/quantize/qdq';
import { sha256 } from '../src/hash';
import { readManifest } from '../src/packs/pack';
import { int8FromTable, parseCalibrationTable } from '../src/graphs/quantize/table';
import { seededRandom } from '../src/train/evaluate';
import { repoRoot } from './helpers/paths';

const [C, O, H, K] = [3, 4, 6, 3];
const random = seededRandom(7);
const weights = Float32Array.from({ length: O * C * K * K }, () => random() * 2 - 1);
const bias = Float32Array.from({ length: O }, () => random() - 0.5);

/** x [1, C, H, H] -> Conv (pads 1) -> y_conv -> Identity -> y. */
const model: OnnxModel = {
  irVersion: 8,
  opsetVersion: 17,
  producerName: 'test',
  producerVersion: '1',
  docString: '',
  graph: {
    name: 'conv',
    nodes: [
      {
        name: 'conv',
        opType: 'Conv',
        inputs: ['x', 'w', 'b'],
        outputs: ['y_conv'],
        attributes: [
          { name: 'kernel_shape', type: 'ints', value: [K, K] },
          { name: 'pads', type: 'ints', value: [1, 1, 1, 1] },
        ],
      },
      { name: 'identity', opType: 'Identity', inputs: ['y_conv'], outputs: ['y'], attributes: [] },
    ],
    initializers: [
      { name: 'w', dims: [O, C, K, K], type: 'float32', data: weights },
      { name: 'b', dims: [O], type: 'float32', data: bias },
    ],
    inputs: [{ name: 'x', dims: [1, C, H, H] }],
    outputs: [{ name: 'y', dims: [1, O, H, H] }],
  },
};

const input = (): FloatTensor[] => [{ name: 'x', dims: [1, C, H, H], data: Float32Array.from({ length: C * H * H }, () => random() * 4 - 1) }];

let addon: NativeAddon;
before(() => {
  addon = loadAddon();
  addon.configure({ providers: ['cpu'], deviceId: 0, trtCacheDir: os.tmpdir(), trtFp16: false, poolThreads: 2, intraOpThreads: 1 });
});

/** Whether two u8 x s8 products of these weights, summed as x86 without VNNI does (vpmaddubsw), fit a signed 16-bit lane. */
const cannotSaturate = (q: Int8Array): boolean => q.every((a) => q.every((b) => 255 * Math.abs(a) + 255 * Math.abs(b) <= 32767));

test('weights: per-channel symmetric 7-bit, each within half a step of the float value', () => {
  const { q, scales } = quantizeWeights(weights, [O, C, K, K], 0);
  const per = weights.length / O;
  for (let i = 0; i < weights.length; i++) {
    const scale = scales[Math.floor(i / per)]!;
    assert.ok(Math.abs(q[i]! * scale - weights[i]!) <= scale / 2 + 1e-7);
    assert.ok(Math.abs(q[i]!) <= WEIGHT_QMAX);
  }
  assert.deepEqual(activationParams([-1, 3]), { scale: Math.fround(4 / 255), zeroPoint: 64 });
  assert.equal(activationParams([0.5, 6]).zeroPoint, 0, 'a range above zero is widened to hold zero exactly');
});

test('property: no weight the quantizer writes can saturate a u8 x s8 pair sum, whatever the weights', () => {
  const draw = seededRandom(31);
  const shapes: number[][] = [[1, 1, 1, 1], [8, 3, 3, 3], [16, 1, 3, 3], [5, 40]];
  for (let round = 0; round < 200; round++) {
    const dims = shapes[round % shapes.length]!;
    const n = dims.reduce((a, b) => a * b, 1);
    // Plain, heavy-tailed, one-sided, tiny and huge magnitudes, exact zeros.
    const scale = 10 ** (draw() * 12 - 6);
    const w = Float32Array.from({ length: n }, () => {
      const u = draw();
      return u < 0.1 ? 0 : (u < 0.5 ? -1 : 1) * scale * (draw() < 0.05 ? 50 * draw() : draw());
    });
    const { q } = quantizeWeights(w, dims, dims.length === 2 ? 1 : 0);
    assert.ok(q.every((v) => Math.abs(v) <= WEIGHT_QMAX), `round ${round}`);
    assert.ok(cannotSaturate(Int8Array.of(Math.max(...q), Math.min(...q))), `round ${round}`);
  }
  assert.ok(cannotSaturate(Int8Array.of(WEIGHT_QMAX, -WEIGHT_QMAX)), 'the bound itself');
  assert.ok(!cannotSaturate(Int8Array.of(127)), 'full 8-bit weights could');
});

test('the shipped int8 detector and backbone hold only 7-bit weights', async () => {
  const dir = path.join(repoRoot, 'models/bc-v1');
  const m = await readManifest(dir);
  const c = m.classifier;
  assert.ok('backbone' in c);
  for (const file of [m.detector.int8!.file, c.backbone.int8.file]) {
    const weights = decodeModel(readFileSync(path.join(dir, file))).graph.initializers.filter((t) => t.type === 'int8' && t.name.endsWith('_quantized'));
    assert.ok(weights.length > 50, file);
    for (const t of weights) assert.ok((t.data as Int8Array).every((v) => Math.abs(v) <= WEIGHT_QMAX), `${file}: ${t.name}`);
  }
});

test('a quantized Conv matches its float reference within its quantization steps', async () => {
  const calibrationInputs = [input(), input(), input()];
  const tensors = activationTensors(model);
  assert.deepEqual(tensors, ['x', 'y_conv']);
  const ranges = await calibrate(model, tensors, calibrationInputs, { kind: 'minmax' }, (m, i) => addon.runModel(m, i));
  const qdq = encodeModel(quantizeModel(model, { ranges, floatConvs: new Set(), activationType: 'uint8' }));
  assert.deepEqual(encodeModel(quantizeModel(model, { ranges, floatConvs: new Set(), activationType: 'uint8' })), qdq, 'the same ranges give the same bytes');
  const { scales } = quantizeWeights(weights, [O, C, K, K], 0);
  const sx = activationParams(ranges.x!).scale;
  const sy = activationParams(ranges.y_conv!).scale;
  for (const x of calibrationInputs) {
    const [reference] = await addon.runModel(encodeModel(model), x);
    const [quantized] = await addon.runModel(qdq, x);
    const per = C * K * K;
    const absX = x[0]!.data.reduce((s, v) => s + Math.abs(v), 0);
    for (let i = 0; i < reference!.data.length; i++) {
      const o = Math.floor(i / (H * H));
      const absW = weights.subarray(o * per, (o + 1) * per).reduce((s, v) => s + Math.abs(v), 0);
      // Input rounding through the weights, weight rounding through the inputs (a loose bound:
      // every input), bias and output rounding.
      const bound = (sx / 2) * absW + (scales[o]! / 2) * absX + sx * scales[o]! + sy;
      assert.ok(Math.abs(quantized!.data[i]! - reference!.data[i]!) <= bound, `output ${i}: ${quantized!.data[i]} vs ${reference!.data[i]} (bound ${bound})`);
    }
    const meanError = reference!.data.reduce((s, v, i) => s + Math.abs(v - quantized!.data[i]!), 0) / reference!.data.length;
    assert.ok(meanError < 2 * sy, `mean error ${meanError} is within two output steps (${sy})`);
  }
});

test('the committed calibration table makes the int8 detector the manifest names, byte for byte', async () => {
  const packDir = path.join(repoRoot, 'models/bc-v1');
  const manifest = await readManifest(packDir);
  const int8 = manifest.detector.int8!;
  const table = readFileSync(path.join(packDir, int8.calibration.file));
  assert.equal(sha256(table), int8.calibration.sha256);
  const made = int8FromTable(readFileSync(path.join(packDir, manifest.detector.file)), parseCalibrationTable(table.toString('utf8')));
  assert.equal(sha256(made), int8.sha256);
  assert.throws(() => int8FromTable(readFileSync(path.join(packDir, manifest.detector.file)), { ...parseCalibrationTable(table.toString('utf8')), ranges: {} }), /no range for/);
});

test('a MatMul by a weight matrix: per-column int8 weights, within its quantization steps of the float one', async () => {
  const [rows, k, n] = [3, 16, 5];
  const w = Float32Array.from({ length: k * n }, () => random() * 2 - 1);
  const matmul: OnnxModel = {
    ...model,
    graph: {
      name: 'matmul',
      nodes: [
        { name: 'matmul', opType: 'MatMul', inputs: ['x', 'w'], outputs: ['y_mm'], attributes: [] },
        { name: 'identity', opType: 'Identity', inputs: ['y_mm'], outputs: ['y'], attributes: [] },
      ],
      initializers: [{ name: 'w', dims: [k, n], type: 'float32', data: w }],
      inputs: [{ name: 'x', dims: [rows, k] }],
      outputs: [{ name: 'y', dims: [rows, n] }],
    },
  };
  const x: FloatTensor[] = [{ name: 'x', dims: [rows, k], data: Float32Array.from({ length: rows * k }, () => random() * 2 - 1) }];
  assert.deepEqual(activationTensors(matmul), ['x', 'y_mm']);
  const ranges = await calibrate(matmul, ['x', 'y_mm'], [x], { kind: 'minmax' }, (m, i) => addon.runModel(m, i));
  const [reference] = await addon.runModel(encodeModel(matmul), x);
  const [quantized] = await addon.runModel(encodeModel(quantizeModel(matmul, { ranges, floatConvs: new Set(), activationType: 'uint8' })), x);
  const { scales } = quantizeWeights(w, [k, n], 1);
  const sx = activationParams(ranges.x!).scale;
  const sy = activationParams(ranges.y_mm!).scale;
  for (let i = 0; i < reference!.data.length; i++) {
    const [r, c] = [Math.floor(i / n), i % n];
    let absW = 0;
    let absX = 0;
    for (let j = 0; j < k; j++) {
      absW += Math.abs(w[j * n + c]!);
      absX += Math.abs(x[0]!.data[r * k + j]!);
    }
    const bound = (sx / 2) * absW + (scales[c]! / 2) * absX + sy;
    assert.ok(Math.abs(quantized!.data[i]! - reference!.data[i]!) <= bound, `output ${i}: ${quantized!.data[i]} vs ${reference!.data[i]} (bound ${bound})`);
  }
});
