// The raw layout of a BYTES tensor, shared by the binary REST extension and gRPC's raw contents:
// each element is a 4-byte little-endian length followed by that many bytes.

/** The elements of a raw BYTES tensor, or null when the lengths do not tile the buffer exactly. */
export function splitBytesElements(raw: Buffer): Buffer[] | null {
  const out: Buffer[] = [];
  let at = 0;
  while (at < raw.length) {
    if (at + 4 > raw.length) return null;
    const length = raw.readUInt32LE(at);
    at += 4;
    if (at + length > raw.length) return null;
    out.push(raw.subarray(at, at + length));
    at += length;
  }
  return out;
}

/** `elements` as a raw BYTES tensor. */
export function joinBytesElements(elements: Array<string | Buffer>): Buffer {
  const parts: Buffer[] = [];
  for (const element of elements) {
    const bytes = typeof element === 'string' ? Buffer.from(element, 'utf8') : element;
    const length = Buffer.alloc(4);
    length.writeUInt32LE(bytes.length);
    parts.push(length, bytes);
  }
  return Buffer.concat(parts);
}

/** Typed values as raw little-endian bytes (FP32 or INT32). */
export function rawNumbers(datatype: 'FP32' | 'INT32', values: number[]): Buffer {
  const out = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => (datatype === 'FP32' ? out.writeFloatLE(v, i * 4) : out.writeInt32LE(v, i * 4)));
  return out;
}
