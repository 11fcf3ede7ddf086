// The TFLite -> ONNX converter (src/graphs/tflite) and the SSD anchors (src/graphs/ssd-anchors.ts).
// - each ONNX emitter, run by the real ONNX Runtime (the addon's runModel), against naive NHWC
//   JavaScript implementations of the TFLite operators;
// - the flatbuffer reader on the real .tflite of @mediapipe/objectron;
// - the conversion: operators, batch-agnostic shapes, same bytes every run, the manifest's sha256;
// - end to end: the converted model against TFLite's own outputs (test/fixtures/ssd-reference.json,
//   made by models/tools/ssd_reference.py with the TFLite interpreter's reference kernels);
// - the anchors: the top Cat box of every cat photo against its labelled box.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, describe, test } from 'node:test';
import type { SsdOutputManifest } from '../src/native/detector-output';
import { validateManifest, type Manifest } from '../src/packs/manifest';
import { findPackageDir, readNpmSource } from '../src/graphs/npm-source';
import { summarizeOnnx } from '../src/graphs/onnx/batch';
import { encodeModel } from '../src/graphs/onnx/write';
import { decodeSsdBox, ssdAnchors } from '../src/graphs/ssd-anchors';
import { convertTfliteToOnnx, ONNX_IR_VERSION, ONNX_OPSET } from '../src/graphs/tflite/convert';
import * as emit from '../src/graphs/tflite/emit';
import { FlatBufferError } from '../src/graphs/tflite/flatbuffer';
import { halfToFloat, widenFloat16 } from '../src/graphs/tflite/float16';
import { GraphBuilder } from '../src/graphs/tflite/graph-builder';
import { Activation, Padding, readTflite, tensorTypeName } from '../src/graphs/tflite/schema';
import { loadAddon, type FloatTensor, type NativeAddon } from '../src/native/addon';
import { decodeRgbPng } from './helpers/png';
import { photoEntries, photosDir, repoRoot } from './helpers/paths';
import { iou } from '../src/tools/iou';
import { seededRandom } from '../src/train/evaluate';

const packDir = path.join(repoRoot, 'models/bc-v1');
const manifest: Manifest = validateManifest(JSON.parse(readFileSync(path.join(packDir, 'manifest.json'), 'utf8')), 'bc-v1');
const source = manifest.detector.source!;
const ssd = manifest.detector.output as SsdOutputManifest;
const haveAddon = existsSync(path.join(repoRoot, 'build/Release/catcomfort.node'));
const havePhotos = existsSync(path.join(photosDir, 'manifest.json'));

let addon: NativeAddon;
before(() => {
  if (!haveAddon) return;
  addon = loadAddon();
  addon.configure({ providers: ['cpu'], deviceId: 0, trtCacheDir: os.tmpdir(), trtFp16: false, poolThreads: 2, intraOpThreads: 1 });
});

// ---- naive NHWC references (TFLite semantics, written independently of emit.ts) ----

interface Nhwc {
  shape: [number, number, number, number];
  data: Float32Array;
}

/** Deterministic pseudo-random values in [-1, 1). */
function random(count: number, seed: number): Float32Array {
  const next = seededRandom(seed);
  return Float32Array.from({ length: count }, () => next() * 2 - 1);
}

/** TensorFlow's SAME: output ceil(in / stride), the odd padding pixel at the end. */
function samePadding(size: number, kernel: number, stride: number, dilation: number): { out: number; before: number } {
  const out = Math.ceil(size / stride);
  const needed = (out - 1) * stride + dilation * (kernel - 1) + 1;
  return { out, before: Math.floor(Math.max(needed - size, 0) / 2) };
}

function activate(v: number, activation: Activation): number {
  if (activation === Activation.RELU) return Math.max(v, 0);
  if (activation === Activation.RELU6) return Math.min(Math.max(v, 0), 6);
  return v;
}

/**
 * Convolution over NHWC input. Regular: filter [O, KH, KW, I]. Depthwise: filter [1, KH, KW, I * M],
 * output channel c * M + m reads input channel c.
 */
function convReference(x: Nhwc, filter: emit.Filter, bias: Float32Array | null, p: emit.ConvParams, depthwise: boolean): Nhwc {
  const [n, h, w, c] = x.shape;
  const [fo, kh, kw, fi] = filter.dims as [number, number, number, number];
  const outC = depthwise ? fi : fo;
  const multiplier = depthwise ? fi / c : 1;
  const same = p.padding === Padding.SAME;
  const py = same ? samePadding(h, kh, p.strideH, p.dilationH) : { out: Math.floor((h - (kh - 1) * p.dilationH - 1) / p.strideH) + 1, before: 0 };
  const px = same ? samePadding(w, kw, p.strideW, p.dilationW) : { out: Math.floor((w - (kw - 1) * p.dilationW - 1) / p.strideW) + 1, before: 0 };
  const out = new Float32Array(n * py.out * px.out * outC);
  for (let b = 0; b < n; b++)
    for (let oy = 0; oy < py.out; oy++)
      for (let ox = 0; ox < px.out; ox++)
        for (let o = 0; o < outC; o++) {
          let sum = bias ? bias[o]! : 0;
          for (let ky = 0; ky < kh; ky++) {
            const iy = oy * p.strideH + ky * p.dilationH - py.before;
            if (iy < 0 || iy >= h) continue;
            for (let kx = 0; kx < kw; kx++) {
              const ix = ox * p.strideW + kx * p.dilationW - px.before;
              if (ix < 0 || ix >= w) continue;
              const at = ((b * h + iy) * w + ix) * c;
              if (depthwise) {
                sum += x.data[at + Math.floor(o / multiplier)]! * filter.data[(ky * kw + kx) * fi + o]!;
              } else {
                for (let i = 0; i < c; i++) sum += x.data[at + i]! * filter.data[((o * kh + ky) * kw + kx) * fi + i]!;
              }
            }
          }
          out[((b * py.out + oy) * px.out + ox) * outC + o] = activate(sum, p.activation);
        }
  return { shape: [n, py.out, px.out, outC], data: out };
}

// ---- tiny ONNX graphs around the emitters, run by ONNX Runtime ----

/** A model x [batch, H, W, C] (NHWC) -> Transpose -> body (NCHW) -> Transpose -> y (NHWC). */
function nchwModel(inShape: number[], outShape: number[], body: (g: GraphBuilder, x: string) => string): Buffer {
  const g = new GraphBuilder(['x']);
  const inner = body(g, emit.emitTranspose(g, 'x', emit.NHWC_TO_NCHW));
  emit.emitTranspose(g, inner, emit.NCHW_TO_NHWC, 'y');
  return model(g, [{ name: 'x', dims: ['batch', ...inShape.slice(1)] }], [{ name: 'y', dims: ['batch', ...outShape.slice(1)] }]);
}

function model(g: GraphBuilder, inputs: Array<{ name: string; dims: Array<number | string> }>, outputs: typeof inputs): Buffer {
  return encodeModel({
    irVersion: ONNX_IR_VERSION,
    opsetVersion: ONNX_OPSET,
    producerName: 'test',
    producerVersion: '1',
    docString: '',
    graph: { name: 'test', nodes: g.nodes, initializers: g.initializers, inputs, outputs },
  });
}

async function run(onnx: Buffer, inputs: FloatTensor[]): Promise<FloatTensor[]> {
  return addon.runModel(onnx, inputs);
}

function assertClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tolerance: number, what: string): number {
  assert.equal(actual.length, expected.length, `${what}: length`);
  let worst = 0;
  for (let i = 0; i < actual.length; i++) {
    const diff = Math.abs(actual[i]! - expected[i]!);
    worst = Math.max(worst, diff);
    if (!(diff <= tolerance)) assert.fail(`${what}: element ${i} is ${actual[i]}, expected ${expected[i]} (tolerance ${tolerance})`);
  }
  return worst;
}

const skipNoAddon = haveAddon ? false : 'native addon not built (npm run build:native)';

describe('ONNX emitters against naive TFLite-semantics references (ONNX Runtime)', { skip: skipNoAddon }, () => {
  // fp32 sums of at most a few hundred products of values in [-1, 1]: a few 1e-6 of rounding.
  const TOL = 1e-5;

  const convCases: Array<{ name: string; shape: Nhwc['shape']; filter: number[]; p: emit.ConvParams; bias: boolean }> = [
    { name: '3x3 stride 2 SAME, odd size (pads 1/1), RELU6', shape: [2, 7, 9, 3], filter: [5, 3, 3, 3], p: conv(Padding.SAME, 2, Activation.RELU6), bias: true },
    { name: '3x3 stride 2 SAME, even size (pads 0/1, extra at the end)', shape: [2, 8, 6, 4], filter: [3, 3, 3, 4], p: conv(Padding.SAME, 2, Activation.NONE), bias: true },
    { name: '1x1 stride 1, no bias', shape: [1, 5, 4, 6], filter: [7, 1, 1, 6], p: conv(Padding.SAME, 1, Activation.NONE), bias: false },
    { name: '3x3 stride 1 SAME, RELU', shape: [2, 6, 5, 2], filter: [4, 3, 3, 2], p: conv(Padding.SAME, 1, Activation.RELU), bias: true },
    { name: '3x3 stride 2 VALID', shape: [1, 9, 8, 3], filter: [2, 3, 3, 3], p: conv(Padding.VALID, 2, Activation.NONE), bias: true },
    { name: '3x3 dilation 2 SAME', shape: [1, 9, 9, 2], filter: [3, 3, 3, 2], p: { ...conv(Padding.SAME, 1, Activation.NONE), dilationH: 2, dilationW: 2 }, bias: true },
  ];

  function conv(padding: Padding, stride: number, activation: Activation): emit.ConvParams {
    return { padding, strideH: stride, strideW: stride, dilationH: 1, dilationW: 1, activation };
  }

  for (const [k, c] of convCases.entries()) {
    test(`CONV_2D ${c.name}`, async () => {
      const x: Nhwc = { shape: c.shape, data: random(c.shape.reduce((a, b) => a * b), 10 + k) };
      const filter = { dims: c.filter, data: random(c.filter.reduce((a, b) => a * b), 20 + k) };
      const bias = c.bias ? random(c.filter[0]!, 30 + k) : null;
      const expected = convReference(x, filter, bias, c.p, false);
      let emittedShape: number[] = [];
      const onnx = nchwModel(c.shape, expected.shape, (g, input) => {
        const e = emit.emitConv2d(g, input, c.shape, filter, bias, c.p, { weights: 'w', bias: 'b' });
        emittedShape = e.shape;
        return e.name;
      });
      assert.deepEqual(emittedShape, expected.shape, 'the emitter computes the TFLite output shape');
      const [y] = await run(onnx, [{ name: 'x', dims: c.shape, data: x.data }]);
      assert.deepEqual(y!.dims, expected.shape);
      assertClose(y!.data, expected.data, TOL, c.name);
    });
  }

  for (const [k, c] of [
    { name: '3x3 stride 1 SAME, RELU6', shape: [2, 6, 7, 5], m: 1, p: conv(Padding.SAME, 1, Activation.RELU6) },
    { name: '3x3 stride 2 SAME, odd size', shape: [2, 7, 7, 4], m: 1, p: conv(Padding.SAME, 2, Activation.NONE) },
    { name: '3x3 stride 2 SAME, even size', shape: [1, 10, 8, 3], m: 1, p: conv(Padding.SAME, 2, Activation.RELU6) },
    { name: 'depth multiplier 2 (channel order c * M + m)', shape: [1, 5, 5, 3], m: 2, p: conv(Padding.SAME, 1, Activation.NONE) },
  ].entries()) {
    test(`DEPTHWISE_CONV_2D ${c.name}`, async () => {
      const shape = c.shape as Nhwc['shape'];
      const channels = shape[3] * c.m;
      const x: Nhwc = { shape, data: random(shape.reduce((a, b) => a * b), 40 + k) };
      const filter = { dims: [1, 3, 3, channels], data: random(9 * channels, 50 + k) };
      const bias = random(channels, 60 + k);
      const expected = convReference(x, filter, bias, c.p, true);
      const onnx = nchwModel(shape, expected.shape, (g, input) => {
        const e = emit.emitDepthwiseConv2d(g, input, shape, filter, bias, { ...c.p, depthMultiplier: c.m }, { weights: 'w', bias: 'b' });
        assert.deepEqual(e.shape, expected.shape);
        return e.name;
      });
      const [y] = await run(onnx, [{ name: 'x', dims: shape, data: x.data }]);
      assertClose(y!.data, expected.data, TOL, c.name);
    });
  }

  test('CONV_2D by hand: 3x3 ones over a 3x3 ramp, SAME stride 2', async () => {
    // Input 1..9 (one channel), kernel of ones, bias 0.5: output 2x2 with pads 1 before, 1 after:
    // (0,0) = 1+2+4+5, (0,1) = 2+3+5+6, (1,0) = 4+5+7+8, (1,1) = 5+6+8+9.
    const x = Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const onnx = nchwModel([1, 3, 3, 1], [1, 2, 2, 1], (g, input) =>
      emit.emitConv2d(g, input, [1, 3, 3, 1], { dims: [1, 3, 3, 1], data: new Float32Array(9).fill(1) }, Float32Array.of(0.5), conv(Padding.SAME, 2, Activation.NONE), {
        weights: 'w',
        bias: 'b',
      }).name,
    );
    const [y] = await run(onnx, [{ name: 'x', dims: [1, 3, 3, 1], data: x }]);
    assert.deepEqual(Array.from(y!.data), [12.5, 16.5, 24.5, 28.5]);
    assert.deepEqual(emit.axisPads(3, 3, 2, 1, Padding.SAME), [1, 1]);
  });

  test('SAME padding amounts match TensorFlow (the odd pixel goes after)', () => {
    assert.deepEqual(emit.axisPads(300, 3, 2, 1, Padding.SAME), [0, 1]); // MobileNetV2 stem: 300 -> 150
    assert.deepEqual(emit.axisPads(75, 3, 2, 1, Padding.SAME), [1, 1]); // 75 -> 38
    assert.deepEqual(emit.axisPads(19, 3, 1, 1, Padding.SAME), [1, 1]);
    assert.deepEqual(emit.axisPads(19, 1, 1, 1, Padding.SAME), [0, 0]);
    assert.deepEqual(emit.axisPads(2, 3, 2, 1, Padding.SAME), [0, 1]); // 2 -> 1 (extra layers 3x3 -> 2x2 -> 1x1)
    assert.deepEqual(emit.axisPads(10, 3, 2, 1, Padding.VALID), [0, 0]);
    for (const [size, k, s, d] of [[7, 3, 2, 1], [8, 3, 2, 1], [9, 3, 1, 2], [5, 1, 2, 1]] as const) {
      const [bef] = emit.axisPads(size, k, s, d, Padding.SAME);
      assert.equal(bef, samePadding(size, k, s, d).before);
    }
  });

  test('ADD with RELU6 and CONCATENATION in NCHW (channel axis 3 -> 1), batch 3', async () => {
    const shape = [3, 4, 5, 2];
    const count = shape.reduce((a, b) => a * b);
    const a = random(count, 70).map((v) => v * 8);
    const b = random(count, 71).map((v) => v * 8);
    const g = new GraphBuilder(['a', 'b']);
    const an = emit.emitTranspose(g, 'a', emit.NHWC_TO_NCHW);
    const bn = emit.emitTranspose(g, 'b', emit.NHWC_TO_NCHW);
    const sum = emit.emitAdd(g, an, bn, Activation.RELU6);
    const cat = emit.emitConcat(g, [sum, an], 1, Activation.NONE);
    emit.emitTranspose(g, cat, emit.NCHW_TO_NHWC, 'y');
    const onnx = model(
      g,
      [
        { name: 'a', dims: ['batch', 4, 5, 2] },
        { name: 'b', dims: ['batch', 4, 5, 2] },
      ],
      [{ name: 'y', dims: ['batch', 4, 5, 4] }],
    );
    const [y] = await run(onnx, [
      { name: 'a', dims: shape, data: a },
      { name: 'b', dims: shape, data: b },
    ]);
    const expected = new Float32Array(count * 2);
    for (let p = 0; p < count / 2; p++) {
      for (let c = 0; c < 2; c++) {
        expected[p * 4 + c] = Math.min(Math.max(a[p * 2 + c]! + b[p * 2 + c]!, 0), 6);
        expected[p * 4 + 2 + c] = a[p * 2 + c]!;
      }
    }
    assert.deepEqual(y!.dims, [3, 4, 5, 4]);
    assertClose(y!.data, expected, 1e-6, 'add + concat');
  });

  test('RESHAPE keeps TFLite element order (NHWC flattening) and any batch (shape [0, -1, 1, 4])', async () => {
    // A 2x3 map of 8 channels -> [batch, 12, 1, 4]; then CONCATENATION on axis 1 with itself.
    const g = new GraphBuilder(['x']);
    const nchw = emit.emitTranspose(g, 'x', emit.NHWC_TO_NCHW);
    const plain = emit.emitTranspose(g, nchw, emit.NCHW_TO_NHWC); // as the converter does before a Reshape
    const r = emit.emitReshape(g, plain, [0, -1, 1, 4], 'shape');
    emit.emitConcat(g, [r, r], 1, Activation.NONE, 'y');
    const onnx = model(g, [{ name: 'x', dims: ['batch', 2, 3, 8] }], [{ name: 'y', dims: ['batch', 24, 1, 4] }]);
    const x = random(2 * 2 * 3 * 8, 80);
    const [y] = await run(onnx, [{ name: 'x', dims: [2, 2, 3, 8], data: x }]);
    assert.deepEqual(y!.dims, [2, 24, 1, 4]);
    const expected = new Float32Array(2 * 96);
    for (let b = 0; b < 2; b++) {
      const item = x.subarray(b * 48, (b + 1) * 48);
      expected.set(item, b * 96);
      expected.set(item, b * 96 + 48);
    }
    assertClose(y!.data, expected, 0, 'reshape');
  });
});

test('float16 widening is exact', () => {
  assert.equal(halfToFloat(0x3c00), 1);
  assert.equal(halfToFloat(0xc000), -2);
  assert.equal(halfToFloat(0x3555), 0.333251953125);
  assert.equal(halfToFloat(0x7bff), 65504);
  assert.equal(halfToFloat(0x0001), 2 ** -24); // smallest subnormal
  assert.equal(halfToFloat(0x03ff), 1023 * 2 ** -24); // largest subnormal
  assert.equal(halfToFloat(0x0400), 2 ** -14); // smallest normal
  assert.ok(Object.is(halfToFloat(0x8000), -0));
  assert.equal(halfToFloat(0x7c00), Infinity);
  assert.equal(halfToFloat(0xfc00), -Infinity);
  assert.ok(Number.isNaN(halfToFloat(0x7e00)));
  const bytes = Buffer.from([0x00, 0x3c, 0x00, 0xc0]);
  assert.deepEqual(Array.from(widenFloat16(bytes)), [1, -2]);
  // Every finite half value survives float32 unchanged.
  for (let bits = 0; bits < 0x10000; bits++) {
    const v = halfToFloat(bits);
    if (Number.isFinite(v)) assert.equal(Math.fround(v), v);
  }
});

describe('the real model of @mediapipe/objectron', () => {
  const packageDir = findPackageDir(source.npm, repoRoot);
  let tflite: Buffer;
  before(() => {
    assert.ok(packageDir, `${source.npm} is installed (a dependency of the project)`);
    tflite = readNpmSource(source, repoRoot);
  });

  test('the package file: label map in bytes [0, 184) with Cat at the manifest index, then the .tflite', () => {
    const whole = readFileSync(path.join(packageDir!, source.file));
    const labels = whole.subarray(0, source.byteRange![0]).toString('utf8').trim().split('\n');
    assert.equal(labels.length, ssd.numClasses);
    assert.equal(labels[ssd.catClassIndex], 'Cat');
    assert.equal(labels[0], '???', 'index 0 is the background class');
    assert.equal(tflite.toString('latin1', 4, 8), 'TFL3');
    assert.equal(createHash('sha256').update(tflite).digest('hex'), source.sha256);
  });

  test('flatbuffer reader: operators, inputs, outputs and weight tensors', () => {
    const model = readTflite(tflite);
    assert.equal(model.version, 3);
    assert.equal(model.subgraphs.length, 1);
    const sg = model.subgraphs[0]!;
    const ops: Record<string, number> = {};
    for (const op of sg.operators) ops[op.opName] = (ops[op.opName] ?? 0) + 1;
    // The same list the TFLite interpreter reports for this file (_get_ops_details).
    assert.deepEqual(ops, { DEQUANTIZE: 144, CONV_2D: 55, DEPTHWISE_CONV_2D: 17, ADD: 10, RESHAPE: 13, CONCATENATION: 2 });
    const tensor = (i: number) => sg.tensors[i]!;
    assert.deepEqual(
      sg.inputs.map((i) => [tensor(i).name, tensor(i).shape, tensorTypeName(tensor(i).type)]),
      [['normalized_input_image_tensor', [1, 300, 300, 3], 'FLOAT32']],
    );
    assert.deepEqual(
      sg.outputs.map((i) => [tensor(i).name, tensor(i).shape]),
      [
        ['raw_outputs/box_encodings', [1, 1917, 4]],
        ['raw_outputs/class_predictions', [1, 1917, 24]],
      ],
    );
    const stem = sg.operators.find((op) => op.opName === 'CONV_2D')!;
    assert.deepEqual(tensor(stem.inputs[0]!).shape, [1, 300, 300, 3]);
    assert.deepEqual(tensor(stem.inputs[1]!).shape, [32, 3, 3, 3]);
    assert.deepEqual(tensor(stem.outputs[0]!).shape, [1, 150, 150, 32]);
    // Every DEQUANTIZE turns a constant fp16 tensor into the fp32 weights of a convolution.
    for (const op of sg.operators.filter((o) => o.opName === 'DEQUANTIZE')) {
      const input = tensor(op.inputs[0]!);
      assert.equal(tensorTypeName(input.type), 'FLOAT16');
      assert.equal(model.buffers[input.buffer]!.length, 2 * input.shape.reduce((a, b) => a * b, 1));
    }
  });

  test('flatbuffer reader refuses foreign and truncated files', () => {
    assert.throws(() => readTflite(Buffer.from('not a tflite file at all')), FlatBufferError);
    assert.throws(() => readTflite(tflite.subarray(0, 1000)), FlatBufferError);
  });

  test('conversion: ONNX operators, NCHW inside, batch-agnostic, same bytes every run, the manifest sha256', () => {
    const first = convertTfliteToOnnx(tflite);
    const second = convertTfliteToOnnx(Buffer.from(tflite));
    assert.ok(first.onnx.equals(second.onnx), 'two conversions give identical bytes');
    assert.equal(createHash('sha256').update(first.onnx).digest('hex'), manifest.detector.sha256);
    assert.deepEqual(first.onnxOperators, { Transpose: 13, Conv: 72, Clip: 43, Add: 10, Reshape: 13, Concat: 2 });
    const s = summarizeOnnx(first.onnx);
    assert.deepEqual(s.inputs, [{ name: 'normalized_input_image_tensor', dims: ['batch', 300, 300, 3] }]);
    assert.deepEqual(s.outputs, [
      { name: 'raw_outputs/box_encodings', dims: ['batch', 1917, 4] },
      { name: 'raw_outputs/class_predictions', dims: ['batch', 1917, 24] },
    ]);
    assert.equal(s.nodeOpTypes[0], 'Transpose', 'one Transpose after the NHWC input');
    const reshapes = s.int64Constants.map((c) => c.values.map(Number));
    assert.equal(reshapes.length, 13);
    for (const shape of reshapes) assert.equal(shape[0], 0, `Reshape [${shape}] copies the batch dim`);
  });
});

interface Reference {
  tfliteSha256: string;
  catClassIndex: number;
  photos: Array<{
    file: string;
    inputSha256: string;
    topCat: Array<{ anchor: number; catLogit: number; boxEncoding: number[] }>;
    boxEncodings: { sum: number; sumAbs: number; maxAbs: number };
    classLogits: { sum: number; sumAbs: number; maxAbs: number };
  }>;
}

/** The input of models/tools/ssd_reference.py: nearest-neighbour stretch, x / 127.5 - 1 (float64, then float32). */
function referenceInput(file: Buffer): Float32Array {
  const png = decodeRgbPng(file);
  const out = new Float32Array(300 * 300 * 3);
  for (let y = 0; y < 300; y++) {
    const sy = Math.floor(((2 * y + 1) * png.height) / 600);
    for (let x = 0; x < 300; x++) {
      const sx = Math.floor(((2 * x + 1) * png.width) / 600);
      for (let c = 0; c < 3; c++) out[(y * 300 + x) * 3 + c] = png.data[(sy * png.width + sx) * 3 + c]! / 127.5 - 1;
    }
  }
  return out;
}

const skipE2e = !haveAddon ? skipNoAddon : havePhotos ? false : `shared photos not found in ${photosDir}`;

describe('end to end: the converted model against TFLite (reference kernels)', { skip: skipE2e }, () => {
  test('outputs match test/fixtures/ssd-reference.json on three photos, run as one batch of 3', async (t) => {
    const reference = JSON.parse(readFileSync(path.join(repoRoot, 'test/fixtures/ssd-reference.json'), 'utf8')) as Reference;
    assert.equal(reference.tfliteSha256, source.sha256);
    assert.equal(reference.catClassIndex, ssd.catClassIndex);
    const onnx = convertTfliteToOnnx(readNpmSource(source, repoRoot)).onnx;
    const inputs = reference.photos.map((p) => referenceInput(readFileSync(path.join(photosDir, p.file))));
    reference.photos.forEach((p, i) => {
      const bytes = Buffer.from(inputs[i]!.buffer, inputs[i]!.byteOffset, inputs[i]!.byteLength);
      assert.equal(createHash('sha256').update(bytes).digest('hex'), p.inputSha256, `${p.file}: same input tensor as the reference`);
    });
    const batch = new Float32Array(inputs.length * inputs[0]!.length);
    inputs.forEach((x, i) => batch.set(x, i * x.length));
    const [boxes, logits] = await run(onnx, [{ name: 'normalized_input_image_tensor', dims: [inputs.length, 300, 300, 3], data: batch }]);
    assert.deepEqual(boxes!.dims, [3, 1917, 4]);
    assert.deepEqual(logits!.dims, [3, 1917, 24]);

    // Both sides run the same fp32 network (fp16 weights widened exactly on both); only the order
    // of fp32 summations differs (ORT's im2col/GEMM kernels vs TFLite's reference loops), a few
    // float32 ulps per layer. Measured here: at most 6e-6 on these values (logits up to ~20, box
    // encodings up to ~80), 2e-7 relative on whole-output sums; on uniform noise inputs up to 4e-5.
    // 1e-4 absolute per value and 1e-5 relative on sums leave that room for other CPUs' kernels,
    // while a real conversion error (a wrong pad, layout or weight order) moves values by 1e-2 or more.
    const TOL = 1e-4;
    let worst = 0;
    reference.photos.forEach((p, i) => {
      const box = boxes!.data.subarray(i * 1917 * 4, (i + 1) * 1917 * 4);
      const cls = logits!.data.subarray(i * 1917 * 24, (i + 1) * 1917 * 24);
      const cat = (a: number) => cls[a * 24 + ssd.catClassIndex]!;
      for (const r of p.topCat) {
        worst = Math.max(worst, Math.abs(cat(r.anchor) - r.catLogit));
        assert.ok(Math.abs(cat(r.anchor) - r.catLogit) <= TOL, `${p.file} anchor ${r.anchor}: Cat logit ${cat(r.anchor)} vs ${r.catLogit}`);
        worst = Math.max(worst, assertClose(box.subarray(r.anchor * 4, r.anchor * 4 + 4), r.boxEncoding, TOL, `${p.file} anchor ${r.anchor} box`));
      }
      let top = 0;
      for (let a = 1; a < 1917; a++) if (cat(a) > cat(top)) top = a;
      assert.equal(top, p.topCat[0]!.anchor, `${p.file}: same top Cat anchor`);
      for (const [name, values, expected] of [
        ['box encodings', box, p.boxEncodings],
        ['class logits', cls, p.classLogits],
      ] as const) {
        let sum = 0;
        let sumAbs = 0;
        let maxAbs = 0;
        for (const v of values) {
          sum += v;
          sumAbs += Math.abs(v);
          maxAbs = Math.max(maxAbs, Math.abs(v));
        }
        const scale = expected.sumAbs;
        assert.ok(Math.abs(sum - expected.sum) <= 1e-5 * scale, `${p.file} ${name}: sum ${sum} vs ${expected.sum}`);
        assert.ok(Math.abs(sumAbs - expected.sumAbs) <= 1e-5 * scale, `${p.file} ${name}: sum |v| ${sumAbs} vs ${expected.sumAbs}`);
        assert.ok(Math.abs(maxAbs - expected.maxAbs) <= TOL, `${p.file} ${name}: max |v| ${maxAbs} vs ${expected.maxAbs}`);
      }
    });
    t.diagnostic(`largest difference on the reference anchors: ${worst.toExponential(2)}`);
  });
});

describe('SSD anchors: the top Cat box of each cat photo lands on the labelled cat', { skip: skipE2e }, () => {
  test('1917 anchors in output order', () => {
    const anchors = ssdAnchors(ssd.anchors);
    assert.equal(anchors.length, 19 * 19 * 3 + (10 * 10 + 5 * 5 + 3 * 3 + 2 * 2 + 1) * 6);
    assert.equal(anchors.length, 1917);
    const close = (a: object, b: object) =>
      assert.deepEqual(
        Object.values(a).map((v: number) => +v.toFixed(6)),
        Object.values(b).map((v: number) => +v.toFixed(6)),
      );
    // First map (19x19): (0.1, 1), (0.2, 2), (0.2, 0.5) per cell.
    close(anchors[0]!, { yCenter: 0.5 / 19, xCenter: 0.5 / 19, height: 0.1, width: 0.1 });
    close(anchors[1]!, { yCenter: 0.5 / 19, xCenter: 0.5 / 19, height: 0.2 / Math.SQRT2, width: 0.2 * Math.SQRT2 });
    close(anchors[3]!, { yCenter: 0.5 / 19, xCenter: 1.5 / 19, height: 0.1, width: 0.1 });
    // Second map (10x10, scale 0.35): ratios 1, 2, 0.5, 3, 0.3333, then sqrt(0.35 * 0.5) at ratio 1.
    close(anchors[1083]!, { yCenter: 0.05, xCenter: 0.05, height: 0.35, width: 0.35 });
    close(anchors[1088]!, { yCenter: 0.05, xCenter: 0.05, height: Math.sqrt(0.35 * 0.5), width: Math.sqrt(0.35 * 0.5) });
    // Last map (1x1, scale 0.95): the interpolated anchor uses scale 1 beyond the last layer.
    close(anchors[1916]!, { yCenter: 0.5, xCenter: 0.5, height: Math.sqrt(0.95), width: Math.sqrt(0.95) });
    const box = decodeSsdBox([1, -2, Math.log(2) * 5, 0], anchors[1083]!, ssd.boxCoderScales);
    const expected = { yMin: 0.05 + 0.035 - 0.35, xMin: 0.05 - 0.07 - 0.175, yMax: 0.05 + 0.035 + 0.35, xMax: 0.05 - 0.07 + 0.175 };
    close(box, expected);
  });

  test('service preprocessing + converted model + anchors: IoU with the labelled boxes', async (t) => {
    const cats = photoEntries().filter((e) => e.group === 'cat' && e.box);
    const onnx = readFileSync(path.join(packDir, manifest.detector.file));
    const anchors = ssdAnchors(ssd.anchors);
    const pre = await Promise.all(cats.map((e) => addon.preprocessImage(readFileSync(e.path), manifest.detector.preprocess)));
    const batch = new Float32Array(pre.length * 300 * 300 * 3);
    pre.forEach((p, i) => batch.set(p.tensor.data, i * 300 * 300 * 3));
    const [boxes, logits] = await run(onnx, [{ name: 'normalized_input_image_tensor', dims: [pre.length, 300, 300, 3], data: batch }]);
    const ious: number[] = [];
    cats.forEach((e, i) => {
      const cls = logits!.data.subarray(i * 1917 * 24, (i + 1) * 1917 * 24);
      let top = 0;
      for (let a = 1; a < 1917; a++) if (cls[a * 24 + ssd.catClassIndex]! > cls[top * 24 + ssd.catClassIndex]!) top = a;
      const b = decodeSsdBox(boxes!.data.subarray((i * 1917 + top) * 4, (i * 1917 + top) * 4 + 4), anchors[top]!, ssd.boxCoderScales);
      const { width, height } = pre[i]!;
      const found = [Math.max(0, b.xMin * width), Math.max(0, b.yMin * height), Math.min(width, b.xMax * width), Math.min(height, b.yMax * height)];
      const overlap = iou(found, e.box!);
      const probability = 1 / (1 + Math.exp(-cls[top * 24 + ssd.catClassIndex]!));
      t.diagnostic(`${e.file}: Cat ${probability.toFixed(3)} at anchor ${top}, IoU ${overlap.toFixed(2)}`);
      ious.push(overlap);
    });
    const mean = ious.reduce((a, b) => a + b, 0) / ious.length;
    t.diagnostic(`mean IoU over ${ious.length} cat photos: ${mean.toFixed(3)}`);
    // Measured: mean 0.84, lowest 0.58 (a small cat, 038). A wrong anchor order or box decoding
    // drops most IoUs near 0.
    assert.ok(mean >= 0.75, `mean IoU ${mean}`);
    assert.ok(Math.min(...ious) >= 0.5, `lowest IoU ${Math.min(...ious)}`);
  });
});
