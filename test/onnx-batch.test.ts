import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { withDynamicBatch, summarizeOnnx, _wire } from '../src/graphs/onnx/batch';
import { modelMirror } from './helpers/paths';

const YOLOX = path.join(modelMirror, 'yolox-nano/yolox_nano.onnx');
const FROM = [1, 85, -1];
const TO = [0, 85, -1];

const { encodeVarint, encodeLenField, encodeVarintField } = _wire;

function int64Raw(values: bigint[]): Buffer {
  const b = Buffer.alloc(values.length * 8);
  values.forEach((v, i) => b.writeBigInt64LE(v, i * 8));
  return b;
}

function tensor(name: string, values: bigint[], storage: 'raw' | 'int64_data'): Buffer {
  return Buffer.concat([
    encodeVarintField(1, BigInt(values.length)), // dims
    encodeVarintField(2, 7n), // data_type INT64
    storage === 'raw'
      ? encodeLenField(9, int64Raw(values))
      : encodeLenField(7, Buffer.concat(values.map((v) => encodeVarint(v)))),
    encodeLenField(8, Buffer.from(name)),
  ]);
}

function valueInfo(name: string, dims: number[]): Buffer {
  const shape = Buffer.concat(dims.map((d) => encodeLenField(1, encodeVarintField(1, BigInt(d)))));
  const tensorType = Buffer.concat([encodeVarintField(1, 1n), encodeLenField(2, shape)]);
  return Buffer.concat([encodeLenField(1, Buffer.from(name)), encodeLenField(2, encodeLenField(1, tensorType))]);
}

function constantNode(output: string, t: Buffer): Buffer {
  const attr = Buffer.concat([encodeLenField(1, Buffer.from('value')), encodeLenField(5, t), encodeVarintField(20, 4n)]);
  return Buffer.concat([encodeLenField(2, Buffer.from(output)), encodeLenField(4, Buffer.from('Constant')), encodeLenField(5, attr)]);
}

function model(graphParts: Buffer[]): Buffer {
  return Buffer.concat([encodeVarintField(1, 8n), encodeLenField(7, Buffer.concat(graphParts))]);
}

test('withDynamicBatch patches the real YOLOX-nano file', { skip: existsSync(YOLOX) ? false : `model not found at ${YOLOX}` }, () => {
  const original = readFileSync(YOLOX);
  const before = summarizeOnnx(original);
  assert.deepEqual(before.inputs, [{ name: 'images', dims: [1, 3, 416, 416] }]);
  assert.deepEqual(before.outputs, [{ name: 'output', dims: [1, 3549, 85] }]);
  assert.ok(before.valueInfoCount > 0);
  const reshapeBefore = before.int64Constants.filter((c) => c.values.join() === '1,85,-1');
  assert.equal(reshapeBefore.length, 3);

  const patched = withDynamicBatch(original, FROM, TO);
  const after = summarizeOnnx(patched);
  assert.deepEqual(after.inputs, [{ name: 'images', dims: ['batch', 3, 416, 416] }]);
  assert.deepEqual(after.outputs, [{ name: 'output', dims: ['batch', 3549, 85] }]);
  assert.equal(after.valueInfoCount, 0);
  assert.equal(after.initializerCount, before.initializerCount);
  assert.equal(after.nodeCount, before.nodeCount);
  const changed = after.int64Constants.filter((c) => c.values.join() === '0,85,-1');
  assert.deepEqual(
    changed.map((c) => c.name).sort(),
    reshapeBefore.map((c) => c.name).sort(),
  );
  assert.equal(after.int64Constants.filter((c) => c.values.join() === '1,85,-1').length, 0);
  // Every other int64 constant is untouched.
  const others = (s: typeof before) =>
    s.int64Constants.filter((c) => !reshapeBefore.some((r) => r.name === c.name)).map((c) => `${c.name}=${c.values.join(',')}`);
  assert.deepEqual(others(after), others(before));
  // Only value_info is dropped and a few dims rewritten: a few KB smaller, weights intact.
  const shrink = original.length - patched.length;
  assert.ok(shrink > 1000 && shrink < 200_000, `size change ${shrink} bytes`);
  // Idempotence of the constants: patching again finds nothing to do.
  assert.throws(() => withDynamicBatch(patched, FROM, TO), /no INT64 Reshape constant equal to \[1, 85, -1\]/);
});

test('withDynamicBatch handles raw_data, int64_data and Constant nodes', () => {
  const m = model([
    encodeLenField(1, constantNode('shape_a', tensor('', [1n, 85n, -1n], 'int64_data'))),
    encodeLenField(2, Buffer.from('g')),
    encodeLenField(5, tensor('shape_b', [1n, 85n, -1n], 'raw')),
    encodeLenField(5, tensor('other', [1n, 85n], 'raw')),
    encodeLenField(11, valueInfo('images', [1, 3, 416, 416])),
    encodeLenField(12, valueInfo('output', [1, 3549, 85])),
    encodeLenField(13, valueInfo('mid', [1, 85, 10])),
  ]);
  const s = summarizeOnnx(withDynamicBatch(m, FROM, TO));
  assert.deepEqual(
    s.int64Constants.map((c) => [c.name, c.source, c.values.join()]),
    [
      ['shape_a', 'constant-node', '0,85,-1'],
      ['shape_b', 'initializer', '0,85,-1'],
      ['other', 'initializer', '1,85'],
    ],
  );
  assert.deepEqual(s.inputs[0]?.dims, ['batch', 3, 416, 416]);
  assert.deepEqual(s.outputs[0]?.dims, ['batch', 3549, 85]);
  assert.equal(s.valueInfoCount, 0);
});

test('withDynamicBatch throws when the Reshape constant is missing', () => {
  const m = model([
    encodeLenField(5, tensor('shape', [2n, 85n, -1n], 'raw')),
    encodeLenField(11, valueInfo('images', [1, 3, 416, 416])),
    encodeLenField(12, valueInfo('output', [1, 3549, 85])),
  ]);
  assert.throws(() => withDynamicBatch(m, FROM, TO), {
    name: 'Error',
    message: /no INT64 Reshape constant equal to \[1, 85, -1\] found/,
  });
  assert.throws(() => withDynamicBatch(Buffer.from([0x0a, 0x05, 0x01]), FROM, TO), /ONNX protobuf/);
  assert.throws(() => withDynamicBatch(m, FROM, [0, 85]), /equal length/);
});
