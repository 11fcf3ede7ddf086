// In-memory rewrite of an ONNX model so that its batch axis becomes dynamic.
//
// YOLOX-nano is published with a fixed batch of 1: besides the input/output shapes, the three
// detection heads flatten their maps with Reshape(x, [1, 85, -1]). Changing those constants to
// [0, 85, -1] (0 = copy the input's batch dim) and the graph input/output dim 0 to the symbolic
// "batch" is all the graph needs. value_info (intermediate shapes recorded by the exporter) is
// dropped because it still says batch 1; ONNX Runtime re-infers it.
//
// It uses the minimal protobuf wire-format reader/writer of protobuf.ts. Every field it does not
// rewrite is copied byte for byte, in its original order. Field numbers (checked against
// onnx.proto of onnx 1.23):
//   ModelProto.graph = 7
//   GraphProto.node = 1, initializer = 5, input = 11, output = 12, value_info = 13
//   NodeProto.op_type = 4, attribute = 5;  AttributeProto.name = 1, t = 5
//   TensorProto.dims = 1, data_type = 2, name = 8, int64_data = 7, raw_data = 9, data_location = 14
//   ValueInfoProto.name = 1, type = 2;  TypeProto.tensor_type = 1;  TypeProto.Tensor.shape = 2
//   TensorShapeProto.dim = 1;  Dimension.dim_value = 1, dim_param = 2

import {
  encodeLenField,
  encodeVarint,
  encodeVarintField,
  firstLen,
  parseMessage,
  payload,
  readInt64s,
  rewrite,
  utf8,
  WT_LEN,
  WT_VARINT,
} from './protobuf';

const TENSOR_INT64 = 7;
const DATA_LOCATION_EXTERNAL = 1;

export const BATCH_DIM_PARAM = 'batch';

export interface TensorInfo {
  name: string;
  dataType: number;
  dims: bigint[];
  /** int64 values when the tensor is an embedded INT64 tensor, else null. */
  int64: bigint[] | null;
  /** Where the values are: raw_data, int64_data, or none. */
  storage: 'raw' | 'int64_data' | 'none';
}

export function readTensor(buf: Buffer): TensorInfo {
  const fields = parseMessage(buf);
  const name = utf8(fields.filter((f) => f.no === 8 && f.wt === WT_LEN).map((f) => payload(buf, f))[0]);
  const dataType = Number(fields.find((f) => f.no === 2 && f.wt === WT_VARINT)?.varint ?? 0n);
  const dims = readInt64s(buf, fields, 1);
  const external = fields.some((f) => f.no === 14 && f.wt === WT_VARINT && f.varint === BigInt(DATA_LOCATION_EXTERNAL));
  if (dataType !== TENSOR_INT64 || external) return { name, dataType, dims, int64: null, storage: 'none' };
  const raw = fields.find((f) => f.no === 9 && f.wt === WT_LEN);
  if (raw) {
    const p = payload(buf, raw);
    if (p.length % 8 !== 0) throw new Error(`ONNX: int64 tensor ${name} raw_data is not a multiple of 8 bytes`);
    const vals: bigint[] = [];
    for (let i = 0; i < p.length; i += 8) vals.push(p.readBigInt64LE(i));
    return { name, dataType, dims, int64: vals, storage: 'raw' };
  }
  const vals = readInt64s(buf, fields, 7);
  return { name, dataType, dims, int64: vals, storage: vals.length > 0 ? 'int64_data' : 'none' };
}

function equalValues(a: bigint[], b: bigint[]): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/** Returns the rewritten tensor when it is an INT64 tensor holding exactly `from`, else null. */
function patchTensor(buf: Buffer, from: bigint[], to: bigint[]): Buffer | null {
  const t = readTensor(buf);
  if (t.int64 === null || t.storage === 'none' || !equalValues(t.int64, from)) return null;
  // Shape must be a vector (or scalar-free) of from.length elements; same length => dims unchanged.
  const count = t.dims.reduce((a, b) => a * b, 1n);
  if (count !== BigInt(from.length)) return null;
  // raw_data (9): little-endian int64s; int64_data (7): every occurrence (packed or not) becomes
  // one packed field. Either way, at the first occurrence's position.
  const [no, payload] =
    t.storage === 'raw'
      ? [9, Buffer.concat(to.map((v) => { const b = Buffer.alloc(8); b.writeBigInt64LE(v); return b; }))]
      : [7, Buffer.concat(to.map((v) => encodeVarint(v)))];
  let done = false;
  return rewrite(buf, (f) => {
    if (f.no !== no) return undefined;
    if (done) return null;
    done = true;
    return encodeLenField(no, payload);
  });
}

/** Rewrites every LEN field number `no` of a message by applying `fn` to its payload. */
function editLen(buf: Buffer, no: number, fn: (p: Buffer) => Buffer): Buffer {
  return rewrite(buf, (f) => (f.no === no && f.wt === WT_LEN ? encodeLenField(no, fn(payload(buf, f))) : undefined));
}

/** TensorShapeProto: dim 0, when it is dim_value 1, becomes dim_param "batch". */
function patchShape(shape: Buffer): Buffer {
  let first = true;
  return rewrite(shape, (df) => {
    if (df.no !== 1 || df.wt !== WT_LEN || !first) return undefined;
    first = false;
    const dim = payload(shape, df);
    const value = parseMessage(dim).find((x) => x.no === 1 && x.wt === WT_VARINT);
    if (!value || value.varint !== 1n) return undefined;
    return encodeLenField(1, rewrite(dim, (x) => (x.no === 1 ? encodeLenField(2, Buffer.from(BATCH_DIM_PARAM)) : undefined)));
  });
}

/** ValueInfoProto.type(2) -> TypeProto.tensor_type(1) -> shape(2): patch dim 0. */
function patchValueInfo(vi: Buffer): Buffer {
  return editLen(vi, 2, (type) => editLen(type, 1, (tensor) => editLen(tensor, 2, patchShape)));
}

/**
 * Rewrites an ONNX model (serialized ModelProto) for a dynamic batch axis: every INT64 constant
 * (graph initializer, or the `value` tensor of a Constant node) equal to `from` becomes `to`; the
 * graph inputs (that are not initializers) and outputs get dim 0 changed from 1 to "batch";
 * graph.value_info is dropped. Throws when no constant equals `from`.
 */
export function withDynamicBatch(model: Buffer, from: number[], to: number[]): Buffer {
  if (from.length === 0 || from.length !== to.length) {
    throw new Error(`withDynamicBatch: 'from' and 'to' must be non-empty and of equal length (got ${from.length} and ${to.length})`);
  }
  for (const v of [...from, ...to]) {
    if (!Number.isSafeInteger(v)) throw new Error(`withDynamicBatch: ${v} is not an integer`);
  }
  const fromB = from.map((v) => BigInt(v));
  const toB = to.map((v) => BigInt(v));
  const modelFields = parseMessage(model);
  const graphFields = modelFields.filter((f) => f.no === 7 && f.wt === WT_LEN);
  if (graphFields.length !== 1) throw new Error(`withDynamicBatch: expected one graph in the model, found ${graphFields.length}`);
  let replaced = 0;

  const patchGraph = (graph: Buffer): Buffer => {
    const gFields = parseMessage(graph);
    const initNames = new Set(
      gFields.filter((f) => f.no === 5 && f.wt === WT_LEN).map((f) => readTensor(payload(graph, f)).name),
    );
    return rewrite(graph, (f) => {
      if (f.wt !== WT_LEN) return undefined;
      const p = payload(graph, f);
      switch (f.no) {
        case 5: {
          // initializer
          const t = patchTensor(p, fromB, toB);
          if (!t) return undefined;
          replaced++;
          return encodeLenField(5, t);
        }
        case 1: {
          // node: Constant with a `value` tensor attribute
          if (utf8(firstLen(p, 4)) !== 'Constant') return undefined;
          let changed = false;
          const node = rewrite(p, (nf) => {
            if (nf.no !== 5 || nf.wt !== WT_LEN) return undefined;
            const attr = payload(p, nf);
            if (utf8(firstLen(attr, 1)) !== 'value') return undefined;
            const newAttr = rewrite(attr, (af) => {
              if (af.no !== 5 || af.wt !== WT_LEN) return undefined;
              const t = patchTensor(payload(attr, af), fromB, toB);
              if (!t) return undefined;
              changed = true;
              return encodeLenField(5, t);
            });
            return encodeLenField(5, newAttr);
          });
          if (!changed) return undefined;
          replaced++;
          return encodeLenField(1, node);
        }
        case 11: {
          // input (skip initializer-backed inputs of IR < 4 models)
          const name = utf8(firstLen(p, 1));
          if (initNames.has(name)) return undefined;
          return encodeLenField(11, patchValueInfo(p));
        }
        case 12:
          return encodeLenField(12, patchValueInfo(p));
        case 13:
          return null; // value_info: stale batch-1 shapes
        default:
          return undefined;
      }
    });
  };

  const out = rewrite(model, (f) => (f.no === 7 && f.wt === WT_LEN ? encodeLenField(7, patchGraph(payload(model, f))) : undefined));
  if (replaced === 0) {
    throw new Error(`withDynamicBatch: no INT64 Reshape constant equal to [${from.join(', ')}] found in the model`);
  }
  return out;
}

// ---- read-only summary, for tests and diagnostics ----

export interface OnnxValueSummary {
  name: string;
  /** Tensor dims: a number for dim_value, a string for dim_param, null when unset. */
  dims: Array<number | string | null>;
}

export interface OnnxInt64Constant {
  name: string;
  source: 'initializer' | 'constant-node';
  values: bigint[];
}

export interface OnnxSummary {
  inputs: OnnxValueSummary[];
  outputs: OnnxValueSummary[];
  valueInfoCount: number;
  initializerCount: number;
  nodeCount: number;
  /** op_type of every node, in graph order. */
  nodeOpTypes: string[];
  int64Constants: OnnxInt64Constant[];
}

export function readValueInfo(buf: Buffer): OnnxValueSummary {
  const name = utf8(firstLen(buf, 1));
  const dims: Array<number | string | null> = [];
  const shape = (() => {
    const type = firstLen(buf, 2);
    const tensor = type && firstLen(type, 1);
    return tensor && firstLen(tensor, 2);
  })();
  if (shape) {
    for (const df of parseMessage(shape)) {
      if (df.no !== 1 || df.wt !== WT_LEN) continue;
      const dim = payload(shape, df);
      const fields = parseMessage(dim);
      const v = fields.find((x) => x.no === 1 && x.wt === WT_VARINT);
      const p = fields.find((x) => x.no === 2 && x.wt === WT_LEN);
      dims.push(v ? Number(BigInt.asIntN(64, v.varint)) : p ? payload(dim, p).toString('utf8') : null);
    }
  }
  return { name, dims };
}

/** Parses the parts of a serialized ModelProto that withDynamicBatch touches. */
export function summarizeOnnx(model: Buffer): OnnxSummary {
  const graph = firstLen(model, 7);
  if (!graph) throw new Error('ONNX: model has no graph');
  const s: OnnxSummary = {
    inputs: [],
    outputs: [],
    valueInfoCount: 0,
    initializerCount: 0,
    nodeCount: 0,
    nodeOpTypes: [],
    int64Constants: [],
  };
  for (const f of parseMessage(graph)) {
    if (f.wt !== WT_LEN) continue;
    const p = payload(graph, f);
    if (f.no === 5) {
      s.initializerCount++;
      const t = readTensor(p);
      if (t.int64) s.int64Constants.push({ name: t.name, source: 'initializer', values: t.int64 });
    } else if (f.no === 1) {
      s.nodeCount++;
      s.nodeOpTypes.push(utf8(firstLen(p, 4)));
      if (utf8(firstLen(p, 4)) !== 'Constant') continue;
      const nodeFields = parseMessage(p);
      const out = utf8(nodeFields.filter((x) => x.no === 2 && x.wt === WT_LEN).map((x) => payload(p, x))[0]);
      for (const af of nodeFields) {
        if (af.no !== 5 || af.wt !== WT_LEN) continue;
        const attr = payload(p, af);
        const tb = utf8(firstLen(attr, 1)) === 'value' ? firstLen(attr, 5) : undefined;
        const t = tb && readTensor(tb);
        if (t && t.int64) s.int64Constants.push({ name: out, source: 'constant-node', values: t.int64 });
      }
    } else if (f.no === 11) s.inputs.push(readValueInfo(p));
    else if (f.no === 12) s.outputs.push(readValueInfo(p));
    else if (f.no === 13) s.valueInfoCount++;
  }
  return s;
}

/** Test helper: encodes a varint field (exported for building small protobuf fixtures). */
export const _wire = { encodeVarint, encodeLenField, encodeVarintField };
