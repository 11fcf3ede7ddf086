// The ONNX model reader (src/graphs/onnx/read.ts) against the writer (src/graphs/onnx/write.ts):
// - round trip: decoding and re-encoding gives the same bytes, for the converted SSD of bc-v1, the
//   ONNX Model Zoo's mobilenetv2-12-int8 (com.microsoft ops, seven opset imports, float_data and
//   int32_data tensors) and a small model with every tensor type and storage, a shapeless output,
//   every attribute kind and a node of another domain;
// - the other ways of storing tensor values (float_data, int64_data, packed ints) read the same
//   values, the typed field kept as the tensor's storage;
// - what is outside the subset (another data type or attribute type, a domain with no opset
//   import, a second default opset import, external data) is refused with an error naming it.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { decodeModel } from '../src/graphs/onnx/read';
import { encodeModel, type OnnxModel } from '../src/graphs/onnx/write';
import { encodeFloatField, encodeLenField, encodeStringField, encodeVarint, encodeVarintField, payload, rewrite } from '../src/graphs/onnx/protobuf';
import { repoRoot, zooMobileNetV2Int8 } from './helpers/paths';

const ssdPath = path.join(repoRoot, 'models/bc-v1/ssd_mobilenetv2_oidv4.onnx');

function synthetic(): OnnxModel {
  return {
    irVersion: 8,
    opsetVersion: 13,
    otherOpsets: [{ domain: 'com.microsoft', version: 1 }],
    producerName: 'onnx-read.test',
    producerVersion: '1',
    docString: 'every tensor type, attribute kind and value shape',
    graph: {
      name: 'synthetic',
      nodes: [
        { name: 'q', opType: 'QuantizeLinear', inputs: ['x', 'scale', 'zero'], outputs: ['xq'], attributes: [{ name: 'axis', type: 'int', value: -1 }] },
        { name: 'dq', opType: 'DequantizeLinear', inputs: ['xq', 'scale', 'zero'], outputs: ['xd'], attributes: [] },
        { name: 'pool', opType: 'MaxPool', inputs: ['xd'], outputs: ['p'], attributes: [{ name: 'kernel_shape', type: 'ints', value: [2, 2] }] },
        { name: 'leaky', opType: 'LeakyRelu', inputs: ['p'], outputs: ['y'], attributes: [{ name: 'alpha', type: 'float', value: 0.25 }] },
        { name: 'qadd', opType: 'QLinearAdd', domain: 'com.microsoft', inputs: ['xq', 'scale', 'zero', 'xq', 'scale', 'zero', 'scales', 'zps'], outputs: ['sum'], attributes: [] },
      ],
      initializers: [
        { name: 'scale', dims: [], type: 'float32', data: Float32Array.of(0.5) },
        { name: 'zero', dims: [], type: 'int8', data: Int8Array.of(-3) },
        { name: 'f', dims: [2, 2], type: 'float32', data: Float32Array.of(-0, 1.5, Infinity, -2e-38) },
        { name: 'i64', dims: [3], type: 'int64', data: BigInt64Array.of(-1n, 0n, 9007199254740993n) },
        { name: 'i32', dims: [3], type: 'int32', data: Int32Array.of(-2147483648, 0, 2147483647) },
        { name: 'i8', dims: [4], type: 'int8', data: Int8Array.of(-128, -1, 0, 127) },
        { name: 'u8', dims: [1, 3], type: 'uint8', data: Uint8Array.of(0, 128, 255) },
        { name: 'scales', dims: [2], type: 'float32', data: Float32Array.of(0.25, 3), storage: 'float_data' },
        { name: 'zps', dims: [2], type: 'int8', data: Int8Array.of(-128, 127), storage: 'int32_data' },
        { name: 'bias', dims: [2], type: 'int32', data: Int32Array.of(-5, 2147483647), storage: 'int32_data' },
        { name: 'shape', dims: [2], type: 'int64', data: BigInt64Array.of(-1n, 4n), storage: 'int64_data' },
      ],
      inputs: [{ name: 'x', dims: ['batch', 1, 4, 4] }],
      outputs: [{ name: 'y', dims: ['batch', 1, 2, 2] }, { name: 'xd' }, { name: 'p', dims: [] }],
    },
  };
}

/** `buf` with the payload of its LEN field `no` (every one of them) replaced by `fn` of it. */
function edit(buf: Buffer, no: number, fn: (p: Buffer) => Buffer): Buffer {
  return rewrite(buf, (f) => (f.no === no ? encodeLenField(no, fn(payload(buf, f))) : undefined));
}

/** The synthetic model with each initializer (GraphProto field 5) passed through `fn`. */
function editTensors(fn: (t: Buffer) => Buffer): Buffer {
  return edit(encodeModel(synthetic()), 7, (g) => edit(g, 5, fn));
}

test('the converted SSD reads back to the same bytes', () => {
  const bytes = readFileSync(ssdPath);
  const model = decodeModel(bytes);
  assert.ok(model.graph.nodes.length > 50, `${model.graph.nodes.length} nodes`);
  assert.ok(model.graph.initializers.some((t) => t.type === 'float32' && t.data.length > 1000));
  assert.ok(encodeModel(model).equals(bytes), 'encodeModel(decodeModel(bytes)) differs from the file');
});

test('the ONNX Model Zoo mobilenetv2-12-int8 reads back to the same bytes', { skip: !zooMobileNetV2Int8 && 'mobilenetv2-12-int8.onnx is in neither models/bc-v1 nor the shared model mirror' }, () => {
  const bytes = readFileSync(zooMobileNetV2Int8!);
  assert.equal(createHash('sha256').update(bytes).digest('hex'), 'cc028fe6cae7bc11a4ff53cfc9b79c920e8be65ce33a904ec3e2a8f66d77f95f');
  const model = decodeModel(bytes);
  assert.equal(model.otherOpsets?.length, 6);
  assert.equal(model.graph.nodes.filter((n) => n.domain === 'com.microsoft').length, 12);
  assert.ok(encodeModel(model).equals(bytes), 'encodeModel(decodeModel(bytes)) differs from the file');
});

test('a model with every tensor type and storage, a shapeless output, every attribute kind and another domain round-trips', () => {
  const bytes = encodeModel(synthetic());
  const model = decodeModel(bytes);
  assert.deepEqual(model, synthetic());
  assert.equal(model.graph.outputs[1]!.dims, undefined);
  assert.ok(encodeModel(model).equals(bytes));
});

test('float_data, int64_data and packed ints read the same values as raw_data, the field kept as storage', () => {
  const floatData = (t: Buffer): Buffer =>
    rewrite(t, (f) => {
      if (f.no !== 9 || payload(t, f).length !== 16) return undefined;
      const v = payload(t, f);
      return Buffer.concat([encodeLenField(4, v.subarray(0, 8)), encodeFloatField(4, v.readFloatLE(8)), encodeFloatField(4, v.readFloatLE(12))]);
    });
  const int64Data = (t: Buffer): Buffer =>
    rewrite(t, (f) => {
      if (f.no !== 9 || payload(t, f).length !== 24) return undefined;
      const v = payload(t, f);
      return encodeLenField(7, Buffer.concat([0, 8, 16].map((o) => encodeVarint(v.readBigInt64LE(o)))));
    });
  const other = editTensors((t) => int64Data(floatData(t)));
  assert.notDeepEqual(other, encodeModel(synthetic()));
  const stored = synthetic();
  for (const t of stored.graph.initializers) if (t.name === 'f' || t.name === 'i64') t.storage = t.name === 'f' ? 'float_data' : 'int64_data';
  assert.deepEqual(decodeModel(other), stored);

  // kernel_shape [2, 2] as one packed LEN field instead of one VARINT field per value.
  const packInts = (a: Buffer): Buffer =>
    rewrite(a, (f) => (f.no === 8 ? null : f.no === 20 && f.varint === 7n ? Buffer.concat([encodeLenField(8, Buffer.from([2, 2])), encodeVarintField(20, 7n)]) : undefined));
  const packed = edit(encodeModel(synthetic()), 7, (g) => edit(g, 1, (n) => edit(n, 5, packInts)));
  assert.notDeepEqual(packed, encodeModel(synthetic()));
  assert.deepEqual(decodeModel(packed), synthetic());
});

test('a tensor of an unsupported data type, or int32_data values its type cannot hold, is refused, naming it', () => {
  const float16 = editTensors((t) => rewrite(t, (f) => (f.no === 2 && t.includes('u8') ? encodeVarintField(2, 10n) : undefined)));
  assert.throws(() => decodeModel(float16), /ONNX tensor u8: data type 10 is not supported/);
  const wide = editTensors((t) => rewrite(t, (f) => (f.no === 5 && t.includes('zps') ? encodeLenField(5, Buffer.concat([encodeVarint(300n), encodeVarint(0n)])) : undefined)));
  assert.throws(() => decodeModel(wide), /ONNX tensor zps: int32_data value 300 does not fit int8/);
});

test('external data, other attribute types, domains with no opset import and a second default opset are refused', () => {
  const external = editTensors((t) => rewrite(t, (f) => (f.no === 9 && t.includes('i32') ? encodeVarintField(14, 1n) : undefined)));
  assert.throws(() => decodeModel(external), /ONNX tensor i32: external data is not supported/);

  const stringAttr = edit(encodeModel(synthetic()), 7, (g) =>
    edit(g, 1, (n) => edit(n, 5, (a) => rewrite(a, (f) => (f.no === 20 ? encodeVarintField(20, 3n) : undefined)))),
  );
  assert.throws(() => decodeModel(stringAttr), /ONNX node q: attribute axis has type 3/);

  const domain = edit(encodeModel(synthetic()), 7, (g) => edit(g, 1, (n) => Buffer.concat([n, encodeStringField(7, 'ai.onnx.ml')])));
  assert.throws(() => decodeModel(domain), /ONNX node q: domain ai.onnx.ml has no opset import/);
  const opset = (domain: string): Buffer => encodeLenField(8, Buffer.concat([encodeStringField(1, domain), encodeVarintField(2, 3n)]));
  assert.throws(() => decodeModel(Buffer.concat([encodeModel(synthetic()), opset('ai.onnx')])), /2 opset imports for the default domain/);
  assert.throws(() => decodeModel(Buffer.concat([encodeModel(synthetic()), opset('com.microsoft')])), /more than one opset import for domain com.microsoft/);
});
