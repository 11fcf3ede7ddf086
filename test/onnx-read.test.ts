// The ONNX model reader (src/models/onnx-read.ts) against the writer (src/models/onnx-write.ts):
// - round trip: decoding and re-encoding gives the same bytes, for the converted SSD of bc-v1 and
//   for a small model with every tensor type, a shapeless output and every attribute kind;
// - the other ways of storing tensor values (float_data, int64_data, packed ints) read the same;
// - what is outside the subset (another data type, attribute type or domain, external data) is
//   refused with an error naming the tensor, attribute or domain.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { decodeModel } from '../src/models/onnx-read';
import { encodeModel, type OnnxModel } from '../src/models/onnx-write';
import { encodeFloatField, encodeLenField, encodeStringField, encodeVarint, encodeVarintField, payload, rewrite } from '../src/models/protobuf';
import { repoRoot } from './helpers/paths';

const ssdPath = path.join(repoRoot, 'models/bc-v1/ssd_mobilenetv2_oidv4.onnx');

function synthetic(): OnnxModel {
  return {
    irVersion: 8,
    opsetVersion: 13,
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
      ],
      initializers: [
        { name: 'scale', dims: [], type: 'float32', data: Float32Array.of(0.5) },
        { name: 'zero', dims: [], type: 'int8', data: Int8Array.of(-3) },
        { name: 'f', dims: [2, 2], type: 'float32', data: Float32Array.of(-0, 1.5, Infinity, -2e-38) },
        { name: 'i64', dims: [3], type: 'int64', data: BigInt64Array.of(-1n, 0n, 9007199254740993n) },
        { name: 'i32', dims: [3], type: 'int32', data: Int32Array.of(-2147483648, 0, 2147483647) },
        { name: 'i8', dims: [4], type: 'int8', data: Int8Array.of(-128, -1, 0, 127) },
        { name: 'u8', dims: [1, 3], type: 'uint8', data: Uint8Array.of(0, 128, 255) },
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

test('a model with every tensor type, a shapeless output and every attribute kind round-trips', () => {
  const bytes = encodeModel(synthetic());
  const model = decodeModel(bytes);
  assert.deepEqual(model, synthetic());
  assert.equal(model.graph.outputs[1]!.dims, undefined);
  assert.ok(encodeModel(model).equals(bytes));
});

test('float_data, int64_data and packed ints read as raw_data does', () => {
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
  assert.deepEqual(decodeModel(other), synthetic());

  // kernel_shape [2, 2] as one packed LEN field instead of one VARINT field per value.
  const packInts = (a: Buffer): Buffer =>
    rewrite(a, (f) => (f.no === 8 ? null : f.no === 20 && f.varint === 7n ? Buffer.concat([encodeLenField(8, Buffer.from([2, 2])), encodeVarintField(20, 7n)]) : undefined));
  const packed = edit(encodeModel(synthetic()), 7, (g) => edit(g, 1, (n) => edit(n, 5, packInts)));
  assert.notDeepEqual(packed, encodeModel(synthetic()));
  assert.deepEqual(decodeModel(packed), synthetic());
});

test('a tensor of an unsupported data type is refused, naming it', () => {
  const float16 = editTensors((t) => rewrite(t, (f) => (f.no === 2 && t.includes('u8') ? encodeVarintField(2, 10n) : undefined)));
  assert.throws(() => decodeModel(float16), /ONNX tensor u8: data type 10 is not supported/);
});

test('external data, other attribute types and other domains are refused', () => {
  const external = editTensors((t) => rewrite(t, (f) => (f.no === 9 && t.includes('i32') ? encodeVarintField(14, 1n) : undefined)));
  assert.throws(() => decodeModel(external), /ONNX tensor i32: external data is not supported/);

  const stringAttr = edit(encodeModel(synthetic()), 7, (g) =>
    edit(g, 1, (n) => edit(n, 5, (a) => rewrite(a, (f) => (f.no === 20 ? encodeVarintField(20, 3n) : undefined)))),
  );
  assert.throws(() => decodeModel(stringAttr), /ONNX node q: attribute axis has type 3/);

  const domain = edit(encodeModel(synthetic()), 7, (g) => edit(g, 1, (n) => Buffer.concat([n, encodeStringField(7, 'com.microsoft')])));
  assert.throws(() => decodeModel(domain), /ONNX node q: domain com.microsoft is not supported/);
  const opset = Buffer.concat([encodeModel(synthetic()), encodeLenField(8, Buffer.concat([encodeStringField(1, 'ai.onnx.ml'), encodeVarintField(2, 3n)]))]);
  assert.throws(() => decodeModel(opset), /domain ai.onnx.ml is not supported/);
});
