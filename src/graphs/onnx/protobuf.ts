// Minimal protobuf wire format: enough to read, rewrite and write ONNX models (batch.ts
// patches models in memory, write.ts builds them). Varints are unsigned 64-bit bigints.

export const WT_VARINT = 0;
export const WT_I64 = 1;
export const WT_LEN = 2;
export const WT_I32 = 5;

export interface Field {
  no: number;
  wt: number;
  /** Offsets in the message buffer: whole field (tag included) and value (payload for LEN). */
  start: number;
  end: number;
  valueStart: number;
  /** Varint value (wire type 0), as an unsigned 64-bit bigint. */
  varint: bigint;
}

export function readVarint(buf: Buffer, pos: number): { value: bigint; pos: number } {
  let result = 0n;
  let shift = 0n;
  for (let i = 0; i < 10; i++) {
    if (pos >= buf.length) throw new Error('ONNX protobuf: truncated varint');
    const byte = buf[pos++]!;
    result |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return { value: BigInt.asUintN(64, result), pos };
    shift += 7n;
  }
  throw new Error('ONNX protobuf: varint longer than 10 bytes');
}

function readLength(buf: Buffer, pos: number): { value: number; pos: number } {
  const r = readVarint(buf, pos);
  if (r.value > BigInt(buf.length)) throw new Error('ONNX protobuf: length past end of buffer');
  return { value: Number(r.value), pos: r.pos };
}

export function parseMessage(buf: Buffer): Field[] {
  const fields: Field[] = [];
  let pos = 0;
  while (pos < buf.length) {
    const start = pos;
    const tag = readVarint(buf, pos);
    pos = tag.pos;
    const no = Number(tag.value >> 3n);
    const wt = Number(tag.value & 7n);
    if (no === 0) throw new Error('ONNX protobuf: field number 0');
    let varint = 0n;
    let valueStart = pos;
    switch (wt) {
      case WT_VARINT: {
        const v = readVarint(buf, pos);
        varint = v.value;
        pos = v.pos;
        break;
      }
      case WT_I64:
        pos += 8;
        break;
      case WT_LEN: {
        const len = readLength(buf, pos);
        valueStart = len.pos;
        pos = len.pos + len.value;
        break;
      }
      case WT_I32:
        pos += 4;
        break;
      default:
        throw new Error(`ONNX protobuf: unsupported wire type ${wt} (field ${no})`);
    }
    if (pos > buf.length) throw new Error(`ONNX protobuf: field ${no} runs past the end of its message`);
    fields.push({ no, wt, start, end: pos, valueStart, varint });
  }
  return fields;
}

export function payload(buf: Buffer, f: Field): Buffer {
  return buf.subarray(f.valueStart, f.end);
}

export function encodeVarint(value: bigint): Buffer {
  let v = BigInt.asUintN(64, value);
  const out: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) byte |= 0x80;
    out.push(byte);
  } while (v !== 0n);
  return Buffer.from(out);
}

export function encodeLenField(no: number, data: Buffer): Buffer {
  return Buffer.concat([encodeVarint(BigInt((no << 3) | WT_LEN)), encodeVarint(BigInt(data.length)), data]);
}

export function encodeVarintField(no: number, value: bigint): Buffer {
  return Buffer.concat([encodeVarint(BigInt((no << 3) | WT_VARINT)), encodeVarint(value)]);
}

/** A string field (UTF-8). */
export function encodeStringField(no: number, value: string): Buffer {
  return encodeLenField(no, Buffer.from(value, 'utf8'));
}

/** A float field (wire type I32, little-endian IEEE 754 single). */
export function encodeFloatField(no: number, value: number): Buffer {
  const v = Buffer.alloc(4);
  v.writeFloatLE(value, 0);
  return Buffer.concat([encodeVarint(BigInt((no << 3) | WT_I32)), v]);
}

/** A repeated int64 field, one VARINT field per value (proto2's default, unpacked encoding). */
export function encodeRepeatedInt64Field(no: number, values: readonly (number | bigint)[]): Buffer {
  return Buffer.concat(values.map((v) => encodeVarintField(no, BigInt(v))));
}

/**
 * Re-encodes a message. `edit` sees each field in order and returns undefined (copy the field's
 * bytes unchanged), null (drop it), or the bytes that replace the whole field.
 */
export function rewrite(buf: Buffer, edit: (f: Field) => Buffer | null | undefined): Buffer {
  const parts: Buffer[] = [];
  for (const f of parseMessage(buf)) {
    const r = edit(f);
    if (r === undefined) parts.push(buf.subarray(f.start, f.end));
    else if (r !== null) parts.push(r);
  }
  return Buffer.concat(parts);
}

/** Payload of the first LEN field number `no`, if any. */
export function firstLen(buf: Buffer, no: number): Buffer | undefined {
  const f = parseMessage(buf).find((x) => x.no === no && x.wt === WT_LEN);
  return f ? payload(buf, f) : undefined;
}

export function utf8(buf: Buffer | undefined): string {
  return buf ? buf.toString('utf8') : '';
}

/** Repeated int64 field: packed (LEN) and unpacked (VARINT) encodings both accepted. */
export function readInt64s(buf: Buffer, fields: Field[], no: number): bigint[] {
  const out: bigint[] = [];
  for (const f of fields) {
    if (f.no !== no) continue;
    if (f.wt === WT_VARINT) out.push(BigInt.asIntN(64, f.varint));
    else if (f.wt === WT_LEN) {
      const p = payload(buf, f);
      let pos = 0;
      while (pos < p.length) {
        const v = readVarint(p, pos);
        out.push(BigInt.asIntN(64, v.value));
        pos = v.pos;
      }
    } else throw new Error(`ONNX protobuf: bad wire type for int64 field ${no}`);
  }
  return out;
}
