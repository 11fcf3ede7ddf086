// Reads a serialized ONNX model (ModelProto) back into the plain objects of write.ts, so a
// model can be edited (e.g. quantized) and written again. Only the subset that write.ts writes:
// nodes (of domains the model imports) with float, int and ints attributes, float32/int64/int32/
// int8/uint8 tensors held in the file (raw_data, float_data, int32_data or int64_data, the field
// kept as the tensor's storage), float inputs/outputs with fixed or symbolic dims or no shape.
// Anything else (an unknown field, external data, another data type, a domain not imported) is
// refused with an error naming the tensor, node or attribute, never dropped silently, so
// encodeModel(decodeModel(bytes)) gives back a model that means the same, and the same bytes where
// the file was written as write.ts writes (packed typed fields, default opset import first,
// no empty doc string), as the ONNX Model Zoo's mobilenetv2-12-int8 is. Field numbers: the comment
// at the top of write.ts.
import { endianness } from 'node:os';
import { type Field, parseMessage, payload, readInt64s, WT_I32, WT_LEN, WT_VARINT } from './protobuf';
import { ONNX_DATA_TYPES, type OnnxAttribute, type OnnxModel, type OnnxNode, type OnnxOpset, type OnnxTensor, type OnnxValueInfo } from './write';

type TensorValues = { [K in OnnxTensor['type']]: Omit<Extract<OnnxTensor, { type: K }>, 'name' | 'dims'> }[OnnxTensor['type']];

/** One message's fields, refusing any field number outside `known`; errors name it by `nameField`. */
class Message {
  readonly fields: Field[];
  readonly what: string;
  constructor(readonly buf: Buffer, kind: string, known: readonly number[], nameField?: number) {
    this.fields = parseMessage(buf);
    this.what = kind;
    if (nameField !== undefined) this.what = `${kind} ${this.str(nameField)}`;
    const other = this.fields.find((f) => !known.includes(f.no));
    if (other) throw new Error(`ONNX ${this.what}: field ${other.no} is outside what the ONNX reader supports`);
  }
  has(no: number): boolean {
    return this.fields.some((f) => f.no === no);
  }
  private of(no: number, wt: number): Field[] {
    const fields = this.fields.filter((f) => f.no === no);
    const bad = fields.find((f) => f.wt !== wt);
    if (bad) throw new Error(`ONNX ${this.what}: field ${no} has wire type ${bad.wt}, expected ${wt}`);
    return fields;
  }
  lens(no: number): Buffer[] {
    return this.of(no, WT_LEN).map((f) => payload(this.buf, f));
  }
  /** The last value of a singular field, as protobuf reads it ('' when absent). */
  str(no: number): string {
    return this.lens(no).at(-1)?.toString('utf8') ?? '';
  }
  int(no: number): number {
    return Number(BigInt.asIntN(64, this.of(no, WT_VARINT).at(-1)?.varint ?? 0n));
  }
  float(no: number): number {
    const f = this.of(no, WT_I32).at(-1);
    return f ? this.buf.readFloatLE(f.valueStart) : 0;
  }
  ints(no: number): number[] {
    return readInt64s(this.buf, this.fields, no).map(Number);
  }
}

function decodeAttribute(buf: Buffer, node: string): OnnxAttribute {
  const m = new Message(buf, `node ${node}: attribute`, [1, 2, 3, 8, 20], 1);
  const name = m.str(1);
  switch (m.int(20)) {
    case 1:
      return { name, type: 'float', value: m.float(2) };
    case 2:
      return { name, type: 'int', value: m.int(3) };
    case 7:
      return { name, type: 'ints', value: m.ints(8) };
    default:
      throw new Error(`ONNX node ${node}: attribute ${name} has type ${m.int(20)}; only FLOAT, INT and INTS are supported`);
  }
}

function decodeNode(buf: Buffer, domains: ReadonlySet<string>): OnnxNode {
  const m = new Message(buf, 'node', [1, 2, 3, 4, 5, 7], 3);
  const name = m.str(3);
  const inputs = m.lens(1).map((b) => b.toString('utf8'));
  const outputs = m.lens(2).map((b) => b.toString('utf8'));
  const node: OnnxNode = { name, opType: m.str(4), inputs, outputs, attributes: m.lens(5).map((a) => decodeAttribute(a, name)) };
  if (!m.has(7)) return node;
  if (!domains.has(m.str(7))) throw new Error(`ONNX node ${name}: domain ${m.str(7)} has no opset import`);
  return { ...node, domain: m.str(7) };
}

/** Little-endian bytes copied into an aligned buffer in the host's byte order. */
function hostOrder(raw: Buffer, size: number, tensor: string): ArrayBuffer {
  if (raw.length % size !== 0) throw new Error(`ONNX tensor ${tensor}: ${raw.length} data bytes for ${size}-byte values`);
  const out = Buffer.from(new ArrayBuffer(raw.length));
  raw.copy(out);
  if (endianness() === 'BE' && size === 4) out.swap32();
  if (endianness() === 'BE' && size === 8) out.swap64();
  return out.buffer as ArrayBuffer;
}

function rawValues(dataType: number, raw: Buffer, tensor: string): TensorValues {
  switch (dataType) {
    case ONNX_DATA_TYPES.float32:
      return { type: 'float32', data: new Float32Array(hostOrder(raw, 4, tensor)) };
    case ONNX_DATA_TYPES.int64:
      return { type: 'int64', data: new BigInt64Array(hostOrder(raw, 8, tensor)) };
    case ONNX_DATA_TYPES.int32:
      return { type: 'int32', data: new Int32Array(hostOrder(raw, 4, tensor)) };
    case ONNX_DATA_TYPES.int8:
      return { type: 'int8', data: new Int8Array(hostOrder(raw, 1, tensor)) };
    case ONNX_DATA_TYPES.uint8:
      return { type: 'uint8', data: new Uint8Array(hostOrder(raw, 1, tensor)) };
    default:
      throw new Error(`ONNX tensor ${tensor}: data type ${dataType} is not supported (FLOAT, UINT8, INT8, INT32, INT64 only)`);
  }
}

/** int32_data values as the tensor's type, each checked to fit it. */
function int32Values(m: Message, dataType: number, name: string): TensorValues {
  const values = readInt64s(m.buf, m.fields, 5).map(Number);
  const fit = (type: string, min: number, max: number): number[] => {
    const bad = values.find((v) => v < min || v > max);
    if (bad !== undefined) throw new Error(`ONNX tensor ${name}: int32_data value ${bad} does not fit ${type}`);
    return values;
  };
  if (dataType === ONNX_DATA_TYPES.int8) return { type: 'int8', data: Int8Array.from(fit('int8', -128, 127)) };
  if (dataType === ONNX_DATA_TYPES.uint8) return { type: 'uint8', data: Uint8Array.from(fit('uint8', 0, 255)) };
  return { type: 'int32', data: Int32Array.from(fit('int32', -(2 ** 31), 2 ** 31 - 1)) };
}

/**
 * The values of raw_data (9), float_data (4: packed, or one I32 field per value), int32_data (5)
 * or int64_data (7), with the typed field named as the storage.
 */
function tensorValues(m: Message, dataType: number, name: string): TensorValues {
  if (m.has(13) || m.int(14) === 1) throw new Error(`ONNX tensor ${name}: external data is not supported`);
  if (m.has(9)) return rawValues(dataType, m.lens(9).at(-1)!, name);
  if (m.has(4) && dataType === ONNX_DATA_TYPES.float32) {
    const floats = m.fields.filter((f) => f.no === 4).map((f) => (f.wt === WT_LEN ? payload(m.buf, f) : m.buf.subarray(f.valueStart, f.end)));
    return { ...rawValues(dataType, Buffer.concat(floats), name), storage: 'float_data' };
  }
  if (m.has(5) && [ONNX_DATA_TYPES.int32, ONNX_DATA_TYPES.int8, ONNX_DATA_TYPES.uint8].includes(dataType)) {
    return { ...int32Values(m, dataType, name), storage: 'int32_data' };
  }
  if (m.has(7) && dataType === ONNX_DATA_TYPES.int64) {
    return { type: 'int64', data: BigInt64Array.from(readInt64s(m.buf, m.fields, 7)), storage: 'int64_data' };
  }
  throw new Error(`ONNX tensor ${name}: no raw_data, float_data, int32_data or int64_data for data type ${dataType}`);
}

function decodeTensor(buf: Buffer): OnnxTensor {
  const m = new Message(buf, 'tensor', [1, 2, 4, 5, 7, 8, 9, 13, 14], 8);
  const name = m.str(8);
  const dims = m.ints(1);
  const values = tensorValues(m, m.int(2), name);
  const count = dims.reduce((a, b) => a * b, 1);
  if (values.data.length !== count) throw new Error(`ONNX tensor ${name}: ${values.data.length} values for dims [${dims.join(', ')}]`);
  return { name, dims, ...values };
}

function decodeValueInfo(buf: Buffer): OnnxValueInfo {
  const m = new Message(buf, 'value', [1, 2], 1);
  const name = m.str(1);
  const type = new Message(m.lens(2).at(-1) ?? Buffer.alloc(0), `value ${name}: type`, [1]);
  const tensor = new Message(type.lens(1).at(-1) ?? Buffer.alloc(0), `value ${name}: tensor type`, [1, 2]);
  if (tensor.int(1) !== ONNX_DATA_TYPES.float32) throw new Error(`ONNX value ${name}: element type ${tensor.int(1)} is not FLOAT`);
  if (!tensor.has(2)) return { name };
  const shape = new Message(tensor.lens(2).at(-1)!, `value ${name}: shape`, [1]);
  const dims = shape.lens(1).map((d) => {
    const dim = new Message(d, `value ${name}: dim`, [1, 2]);
    if (dim.has(1)) return dim.int(1);
    if (dim.has(2)) return dim.str(2);
    throw new Error(`ONNX value ${name}: a dim with neither dim_value nor dim_param`);
  });
  return { name, dims };
}

const isDefaultDomain = (domain: string): boolean => domain === '' || domain === 'ai.onnx';

/** The default domain's opset version and the other domains' imports, one import per domain. */
function decodeOpsets(imports: Buffer[]): { opsetVersion: number; otherOpsets: OnnxOpset[] } {
  const opsets = imports.map((b) => {
    const o = new Message(b, 'opset import', [1, 2]);
    return { domain: o.str(1), version: o.int(2) };
  });
  const defaults = opsets.filter((o) => isDefaultDomain(o.domain));
  if (defaults.length !== 1) throw new Error(`ONNX model: ${defaults.length} opset imports for the default domain, expected one`);
  const otherOpsets = opsets.filter((o) => !isDefaultDomain(o.domain));
  const twice = otherOpsets.find((o, i) => otherOpsets.findIndex((p) => p.domain === o.domain) !== i);
  if (twice) throw new Error(`ONNX model: more than one opset import for domain ${twice.domain}`);
  return { opsetVersion: defaults[0]!.version, otherOpsets };
}

export function decodeModel(bytes: Buffer): OnnxModel {
  const m = new Message(bytes, 'model', [1, 2, 3, 6, 7, 8]);
  const graphBytes = m.lens(7).at(-1);
  if (!graphBytes) throw new Error('ONNX model: no graph');
  const g = new Message(graphBytes, 'graph', [1, 2, 5, 11, 12]);
  const { opsetVersion, otherOpsets } = decodeOpsets(m.lens(8));
  const domains = new Set(['', 'ai.onnx', ...otherOpsets.map((o) => o.domain)]);
  return {
    irVersion: m.int(1),
    opsetVersion,
    ...(otherOpsets.length > 0 ? { otherOpsets } : {}),
    producerName: m.str(2),
    producerVersion: m.str(3),
    docString: m.str(6),
    graph: {
      name: g.str(2),
      nodes: g.lens(1).map((n) => decodeNode(n, domains)),
      initializers: g.lens(5).map(decodeTensor),
      inputs: g.lens(11).map(decodeValueInfo),
      outputs: g.lens(12).map(decodeValueInfo),
    },
  };
}
