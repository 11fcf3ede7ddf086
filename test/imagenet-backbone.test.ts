// The ImageNet backbone tooling (src/graphs/imagenet) on the ONNX Model Zoo's mobilenetv2-12-int8:
// - floatCopy: only default-domain ops, no QLinear, QuantizeLinear or DequantizeLinear, one opset
//   import, weights dequantized per channel, the same bytes every time; an unknown op is named;
// - composeCropNetwork: input and outputs (p_discomfort, probs, features) as declared, for the int8
//   and the float form, and as ONNX Runtime's CPU provider gives them at batch 2; the wrong form or
//   head size is refused.
// - the reference head: the generator reproduces the committed head.json.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, describe, test } from 'node:test';
import { composeCropNetwork, CROP_OUTPUTS } from '../src/graphs/imagenet/crop-network';
import { requantize } from '../src/graphs/imagenet/requantize';
import { WEIGHT_QMAX } from '../src/graphs/quantize/qdq';
import { floatCopy } from '../src/graphs/imagenet/float-copy';
import { encodeHead, parseHead } from '../src/graphs/imagenet/head';
import { decodeModel } from '../src/graphs/onnx/read';
import { encodeModel, type OnnxModel, type OnnxTensor } from '../src/graphs/onnx/write';
import { loadAddon, type NativeAddon } from '../src/native/addon';
import { referenceHead } from '../src/tools/make-reference-head';
import { seededRandom } from '../src/train/evaluate';
import { repoRoot, zooMobileNetV2Int8 } from './helpers/paths';

const random = seededRandom(11);
const head = { weights: Float32Array.from({ length: 1280 }, () => (random() - 0.5) / 20), bias: -0.5 };

const tensor = (m: OnnxModel, name: string): OnnxTensor => {
  const t = m.graph.initializers.find((x) => x.name === name);
  assert.ok(t, `initializer ${name}`);
  return t;
};

describe('ImageNet backbone', { skip: !zooMobileNetV2Int8 && 'mobilenetv2-12-int8.onnx is in neither models/bc-v1 nor the shared model mirror' }, () => {
  let int8: OnnxModel;
  let float: OnnxModel;
  let addon: NativeAddon;
  before(() => {
    int8 = decodeModel(readFileSync(zooMobileNetV2Int8!));
    float = floatCopy(int8);
    addon = loadAddon();
    addon.configure({ providers: ['cpu'], deviceId: 0, trtCacheDir: os.tmpdir(), trtFp16: false, poolThreads: 2, intraOpThreads: 1 });
  });

  test('the float copy has only default-domain float ops, one opset import and the same bytes every time', () => {
    const ops = new Set(float.graph.nodes.map((n) => n.opType));
    assert.deepEqual([...ops].sort(), ['Add', 'Clip', 'Concat', 'Conv', 'Gather', 'GlobalAveragePool', 'MatMul', 'Reshape', 'Shape', 'Unsqueeze']);
    assert.ok(float.graph.nodes.every((n) => n.domain === undefined));
    assert.equal(float.otherOpsets, undefined);
    assert.equal(float.opsetVersion, 12);
    assert.deepEqual(float.graph.inputs, [{ name: 'input', dims: ['batch_size', 3, 224, 224] }]);
    assert.deepEqual(float.graph.outputs, [{ name: 'output', dims: ['batch_size', 1000] }]);
    assert.ok(float.graph.nodes.some((n) => n.opType === 'Clip' && n.outputs[0] === '464'), 'the pooled features are the float tensor 464');
    assert.ok(float.graph.initializers.every((t) => t.type === 'float32' || t.type === 'int64'));

    const [q, scale, w] = [tensor(int8, '475_quantized'), tensor(int8, '475_scale'), tensor(float, '475')];
    const per = q.data.length / scale.data.length;
    for (const i of [0, per - 1, per, q.data.length - 1]) assert.equal(w.data[i], Math.fround(Number(scale.data[Math.floor(i / per)]) * Number(q.data[i])));

    const bytes = encodeModel(float);
    assert.ok(encodeModel(floatCopy(decodeModel(readFileSync(zooMobileNetV2Int8!)))).equals(bytes));
    assert.ok(encodeModel(decodeModel(bytes)).equals(bytes));
  });

  test('the float copy names an op it cannot convert', () => {
    const erf = { name: 'odd', opType: 'Erf', inputs: ['output'], outputs: ['erf'], attributes: [] };
    assert.throws(() => floatCopy({ ...int8, graph: { ...int8.graph, nodes: [...int8.graph.nodes, erf] } }), /node odd \(Erf\): op Erf is not supported/);
  });

  for (const form of ['int8', 'float'] as const) {
    test(`the ${form} crop network declares and gives p_discomfort [N,1], probs [N,1000], features [N,1280]`, async () => {
      const model = decodeModel(composeCropNetwork(form === 'int8' ? requantize(int8, float) : float, head));
      assert.deepEqual(model.graph.inputs, [{ name: 'input', dims: ['batch_size', 3, 224, 224] }]);
      assert.deepEqual(model.graph.outputs, [
        { name: 'p_discomfort', dims: ['batch_size', 1] },
        { name: 'probs', dims: ['batch_size', 1000] },
        { name: 'features', dims: ['batch_size', 1280] },
      ]);
      assert.deepEqual(CROP_OUTPUTS, ['p_discomfort', 'probs', 'features']);
      const quantized = model.graph.nodes.filter((n) => n.domain !== undefined || /QLinear|QuantizeLinear/.test(n.opType));
      if (form === 'float') assert.deepEqual(quantized, []);
      else assert.ok(quantized.length > 0 && quantized.every((n) => n.domain === undefined && !n.opType.startsWith('QLinear')), 'QDQ only');

      const x = Float32Array.from({ length: 2 * 3 * 224 * 224 }, () => random() * 4 - 2);
      const out = await addon.runModel(encodeModel(model), [{ name: 'input', dims: [2, 3, 224, 224], data: x }]);
      assert.deepEqual(
        out.map((o) => [o.name, o.dims]),
        [['p_discomfort', [2, 1]], ['probs', [2, 1000]], ['features', [2, 1280]]],
      );
      const [p, probs, features] = out.map((o) => o.data) as [Float32Array, Float32Array, Float32Array];
      for (const b of [0, 1]) {
        const f = features.subarray(b * 1280, (b + 1) * 1280);
        const logit = f.reduce((sum, v, i) => sum + v * head.weights[i]!, head.bias);
        assert.ok(Math.abs(p[b]! - 1 / (1 + Math.exp(-logit))) < 1e-5, `image ${b}: p_discomfort is Sigmoid(features . w + b)`);
        assert.ok(Math.abs(probs.subarray(b * 1000, (b + 1) * 1000).reduce((a, v) => a + v, 0) - 1) < 1e-4);
      }
    });
  }

  test('the zoo\'s QLinear form or a wrong head size is refused', () => {
    assert.throws(() => composeCropNetwork(int8, head), /node Conv_0_quant is QLinearConv; give the float copy \(floatCopy\) or its QDQ form \(requantize\)/);
    assert.throws(() => composeCropNetwork(float, { weights: [1, 2], bias: 0 }), /the head has 2 weights for 1280 features/);
  });

  test('the requantized backbone: 7-bit weights, the zoo\'s activation ranges, the same bytes every time, close to the float copy', async () => {
    const q = requantize(int8, float);
    const weights = q.graph.initializers.filter((t) => t.type === 'int8' && t.name.endsWith('_quantized'));
    assert.equal(weights.length, 53, 'every Conv and the MatMul');
    for (const t of weights) assert.ok(t.data.every((v) => Math.abs(Number(v)) <= WEIGHT_QMAX), t.name);
    const inputScale = Number(tensor(q, 'input_scale').data[0]);
    assert.ok(Math.abs(inputScale - Number(tensor(int8, 'input_scale').data[0])) < 1e-6, 'the input keeps the zoo\'s scale');
    assert.ok(encodeModel(requantize(int8, floatCopy(int8))).equals(encodeModel(q)));
    const x = Float32Array.from({ length: 3 * 224 * 224 }, (_, i) => Math.sin(i / 97) * 1.5);
    const run = async (m: OnnxModel) => (await addon.runModel(encodeModel(m), [{ name: 'input', dims: [1, 3, 224, 224], data: x }]))[0]!.data;
    const [a, b] = [await run(q), await run(float)];
    const top = (d: Float32Array) => d.indexOf(Math.max(...d));
    assert.equal(top(a), top(b), 'the same top class');
  });
});

test('the reference head: the generator makes the committed head.json, which parses as 1280 weights and a bias', () => {
  const committed = readFileSync(path.join(repoRoot, 'models/bc-v1/head.json'), 'utf8');
  assert.equal(referenceHead(), committed);
  const head = parseHead(committed, 'head.json');
  assert.equal(head.weights.length, 1280);
  assert.equal(encodeHead(head), committed);
  assert.throws(() => parseHead('{"inputs": 1280, "weights": [1], "bias": 0}', 'short.json'), /short\.json must be \{"inputs": 1280, "weights": \[1280 finite numbers\]/);
  assert.throws(() => parseHead('nope', 'bad.json'), /bad\.json is not valid JSON/);
});
