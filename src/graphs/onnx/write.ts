// Serialises an ONNX model (ModelProto) from plain objects, with the wire format of protobuf.ts.
// Only what the TFLite converter, the int8 quantizer and the ONNX Model Zoo's int8 MobileNetV2 use:
// float32, int64, int32, int8 and uint8 tensors stored as raw_data (or, where a tensor says so, as
// packed float_data, int32_data or int64_data), nodes of any domain with int, ints and float
// attributes, opset imports of further domains, float graph inputs/outputs with fixed or symbolic
// dims or no shape at all. read.ts reads the same subset back. The output depends on nothing
// but the arguments (fields in field-number order, an empty doc string left out, no timestamps), so
// the same model gives the same bytes every time.
//
// Field numbers (onnx.proto, onnx 1.23):
//   ModelProto: ir_version 1, producer_name 2, producer_version 3, doc_string 6, graph 7, opset_import 8
//   OperatorSetIdProto: domain 1, version 2
//   GraphProto: node 1, name 2, initializer 5, input 11, output 12
//   NodeProto: input 1, output 2, name 3, op_type 4, attribute 5, domain 7
//   AttributeProto: name 1, f 2, i 3, ints 8, type 20 (FLOAT 1, INT 2, INTS 7)
//   TensorProto: dims 1, data_type 2 (FLOAT 1, UINT8 2, INT8 3, INT32 6, INT64 7), float_data 4,
//     int32_data 5, int64_data 7, name 8, raw_data 9
//   ValueInfoProto: name 1, type 2; TypeProto: tensor_type 1; TypeProto.Tensor: elem_type 1, shape 2
//   TensorShapeProto: dim 1; Dimension: dim_value 1, dim_param 2
import {
  encodeFloatField,
  encodeLenField,
  encodeRepeatedInt64Field,
  encodeStringField,
  encodeVarint,
  encodeVarintField,
} from './protobuf';

export const ONNX_FLOAT = 1;
export const ONNX_UINT8 = 2;
export const ONNX_INT8 = 3;
export const ONNX_INT32 = 6;
export const ONNX_INT64 = 7;

export type OnnxAttribute =
  | { name: string; type: 'int'; value: number }
  | { name: string; type: 'ints'; value: readonly number[] }
  | { name: string; type: 'float'; value: number };

export interface OnnxNode {
  name: string;
  opType: string;
  inputs: string[];
  outputs: string[];
  attributes: OnnxAttribute[];
  /** The operator set, e.g. "com.microsoft"; absent: the default (ai.onnx) domain. */
  domain?: string;
}

/**
 * The field a tensor's values are written in when not raw_data: float_data holds float32 values,
 * int32_data int32, int8 and uint8 values, int64_data int64 values (each one packed field).
 */
export type OnnxTensorStorage = 'float_data' | 'int32_data' | 'int64_data';

export type OnnxTensor = (
  | { name: string; dims: number[]; type: 'float32'; data: Float32Array }
  | { name: string; dims: number[]; type: 'int64'; data: BigInt64Array }
  | { name: string; dims: number[]; type: 'int32'; data: Int32Array }
  | { name: string; dims: number[]; type: 'int8'; data: Int8Array }
  | { name: string; dims: number[]; type: 'uint8'; data: Uint8Array }
) & { storage?: OnnxTensorStorage };

/** The ONNX data_type of each tensor type. */
export const ONNX_DATA_TYPES: Readonly<Record<OnnxTensor['type'], number>> = {
  float32: ONNX_FLOAT,
  int64: ONNX_INT64,
  int32: ONNX_INT32,
  int8: ONNX_INT8,
  uint8: ONNX_UINT8,
};

export interface OnnxValueInfo {
  name: string;
  /**
   * A number for a fixed dim, a string for a symbolic one (e.g. "batch"). Absent: a tensor of
   * unknown shape (written with no shape field), e.g. an intermediate exposed for calibration.
   */
  dims?: Array<number | string>;
}

export interface OnnxGraph {
  name: string;
  nodes: OnnxNode[];
  initializers: OnnxTensor[];
  /** float32 tensors. */
  inputs: OnnxValueInfo[];
  outputs: OnnxValueInfo[];
}

export interface OnnxOpset {
  domain: string;
  version: number;
}

export interface OnnxModel {
  irVersion: number;
  /** The default (ai.onnx) domain's opset. */
  opsetVersion: number;
  /** Opset imports of other domains, written after the default one in this order. */
  otherOpsets?: OnnxOpset[];
  producerName: string;
  producerVersion: string;
  docString: string;
  graph: OnnxGraph;
}

function encodeAttribute(a: OnnxAttribute): Buffer {
  const parts = [encodeStringField(1, a.name)];
  switch (a.type) {
    case 'float':
      parts.push(encodeFloatField(2, a.value), encodeVarintField(20, 1n));
      break;
    case 'int':
      parts.push(encodeVarintField(3, BigInt(a.value)), encodeVarintField(20, 2n));
      break;
    case 'ints':
      parts.push(encodeRepeatedInt64Field(8, a.value), encodeVarintField(20, 7n));
      break;
  }
  return Buffer.concat(parts);
}

export function encodeNode(n: OnnxNode): Buffer {
  return Buffer.concat([
    ...n.inputs.map((name) => encodeStringField(1, name)),
    ...n.outputs.map((name) => encodeStringField(2, name)),
    encodeStringField(3, n.name),
    encodeStringField(4, n.opType),
    ...n.attributes.map((a) => encodeLenField(5, encodeAttribute(a))),
    ...(n.domain === undefined ? [] : [encodeStringField(7, n.domain)]),
  ]);
}

/** Little-endian bytes of the tensor's values, whatever the host's byte order. */
function rawData(t: OnnxTensor): Buffer {
  const out = Buffer.alloc(t.data.byteLength);
  switch (t.type) {
    case 'float32':
      t.data.forEach((v, i) => out.writeFloatLE(v, i * 4));
      break;
    case 'int64':
      t.data.forEach((v, i) => out.writeBigInt64LE(v, i * 8));
      break;
    case 'int32':
      t.data.forEach((v, i) => out.writeInt32LE(v, i * 4));
      break;
    case 'int8':
    case 'uint8':
      out.set(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
      break;
  }
  return out;
}

function packedVarints(values: Iterable<number | bigint>): Buffer {
  return Buffer.concat(Array.from(values, (v) => encodeVarint(BigInt(v))));
}

/** The field holding the tensor's values: raw_data (9), or the packed field its storage names. */
function valuesField(t: OnnxTensor): Buffer {
  switch (t.storage) {
    case undefined:
      return encodeLenField(9, rawData(t));
    case 'float_data':
      if (t.type === 'float32') return encodeLenField(4, rawData(t));
      break;
    case 'int32_data':
      if (t.type === 'int32' || t.type === 'int8' || t.type === 'uint8') return encodeLenField(5, packedVarints(t.data));
      break;
    case 'int64_data':
      if (t.type === 'int64') return encodeLenField(7, packedVarints(t.data));
      break;
  }
  throw new Error(`ONNX tensor ${t.name}: ${t.storage} cannot hold ${t.type} values`);
}

export function encodeTensor(t: OnnxTensor): Buffer {
  const count = t.dims.reduce((a, b) => a * b, 1);
  if (count !== t.data.length) throw new Error(`ONNX tensor ${t.name}: ${t.data.length} values for dims [${t.dims.join(', ')}]`);
  const head = [encodeRepeatedInt64Field(1, t.dims), encodeVarintField(2, BigInt(ONNX_DATA_TYPES[t.type]))];
  const [values, name] = [valuesField(t), encodeStringField(8, t.name)];
  return Buffer.concat(t.storage === undefined ? [...head, name, values] : [...head, values, name]);
}

function encodeShape(dims: Array<number | string>): Buffer {
  return Buffer.concat(
    dims.map((d) => encodeLenField(1, typeof d === 'number' ? encodeVarintField(1, BigInt(d)) : encodeStringField(2, d))),
  );
}

function encodeValueInfo(v: OnnxValueInfo): Buffer {
  const elemType = encodeVarintField(1, BigInt(ONNX_FLOAT));
  const tensorType = v.dims === undefined ? elemType : Buffer.concat([elemType, encodeLenField(2, encodeShape(v.dims))]);
  return Buffer.concat([encodeStringField(1, v.name), encodeLenField(2, encodeLenField(1, tensorType))]);
}

function encodeGraph(g: OnnxGraph): Buffer {
  return Buffer.concat([
    ...g.nodes.map((n) => encodeLenField(1, encodeNode(n))),
    encodeStringField(2, g.name),
    ...g.initializers.map((t) => encodeLenField(5, encodeTensor(t))),
    ...g.inputs.map((v) => encodeLenField(11, encodeValueInfo(v))),
    ...g.outputs.map((v) => encodeLenField(12, encodeValueInfo(v))),
  ]);
}

function encodeOpset(o: OnnxOpset): Buffer {
  return encodeLenField(8, Buffer.concat([encodeStringField(1, o.domain), encodeVarintField(2, BigInt(o.version))]));
}

/** The serialized ModelProto: the default domain's opset import first, then the others. */
export function encodeModel(m: OnnxModel): Buffer {
  return Buffer.concat([
    encodeVarintField(1, BigInt(m.irVersion)),
    encodeStringField(2, m.producerName),
    encodeStringField(3, m.producerVersion),
    ...(m.docString === '' ? [] : [encodeStringField(6, m.docString)]),
    encodeLenField(7, encodeGraph(m.graph)),
    encodeOpset({ domain: '', version: m.opsetVersion }),
    ...(m.otherOpsets ?? []).map(encodeOpset),
  ]);
}
