// Minimal FlatBuffers reader: tables, scalars, strings and vectors, read in place from a Buffer
// with every offset bounds-checked. Wire format (flatbuffers.dev, "FlatBuffers internals"):
// - little-endian; the buffer starts with a uoffset (u32) to the root table, optionally followed
//   by a 4-byte file identifier;
// - a table starts with an soffset (i32): its vtable is at table - soffset; the vtable holds u16s:
//   its own size in bytes, the table's inline size, then one offset per field from the table
//   start (0 or past the vtable's end = field absent, read as its default);
// - a field holding a table, string or vector stores a uoffset (u32) relative to the field's own
//   position; a vector (or string) starts with a u32 element count, then the elements (a string's
//   bytes are UTF-8 followed by a 0); a vector of tables holds one uoffset per element;
// - a union is two fields: a u8 type (0 = none) and a uoffset to the table of that type.

export class FlatBufferError extends Error {}

export class Table {
  private readonly vtable: number;
  private readonly vtableSize: number;

  constructor(
    readonly buf: Buffer,
    readonly pos: number,
  ) {
    check(buf, pos, 4);
    const vtable = pos - buf.readInt32LE(pos);
    check(buf, vtable, 4);
    this.vtable = vtable;
    this.vtableSize = buf.readUInt16LE(vtable);
    if (this.vtableSize < 4 || this.vtableSize % 2 !== 0) throw new FlatBufferError(`bad vtable size at ${vtable}`);
    check(buf, vtable, this.vtableSize);
  }

  /** Absolute position of field `index` (0-based, in schema order), or 0 when absent. */
  private field(index: number): number {
    const entry = 4 + 2 * index;
    if (entry + 2 > this.vtableSize) return 0;
    const offset = this.buf.readUInt16LE(this.vtable + entry);
    return offset === 0 ? 0 : this.pos + offset;
  }

  has(index: number): boolean {
    return this.field(index) !== 0;
  }

  /** A scalar field of `size` bytes read by `read`, or `fallback` when absent. */
  private scalar(index: number, fallback: number, size: number, read: (at: number) => number): number {
    const at = this.field(index);
    if (at === 0) return fallback;
    check(this.buf, at, size);
    return read(at);
  }

  uint8(index: number, fallback = 0): number {
    return this.scalar(index, fallback, 1, (at) => this.buf.readUInt8(at));
  }

  int8(index: number, fallback = 0): number {
    return this.scalar(index, fallback, 1, (at) => this.buf.readInt8(at));
  }

  int32(index: number, fallback = 0): number {
    return this.scalar(index, fallback, 4, (at) => this.buf.readInt32LE(at));
  }

  uint32(index: number, fallback = 0): number {
    return this.scalar(index, fallback, 4, (at) => this.buf.readUInt32LE(at));
  }

  uint64(index: number, fallback = 0n): bigint {
    const at = this.field(index);
    if (at === 0) return fallback;
    check(this.buf, at, 8);
    return this.buf.readBigUInt64LE(at);
  }

  /** Target of the uoffset stored in field `index`, or 0 when absent. */
  private target(index: number): number {
    const at = this.field(index);
    if (at === 0) return 0;
    check(this.buf, at, 4);
    const to = at + this.buf.readUInt32LE(at);
    check(this.buf, to, 4);
    return to;
  }

  table(index: number): Table | null {
    const at = this.target(index);
    return at === 0 ? null : new Table(this.buf, at);
  }

  string(index: number): string | null {
    const bytes = this.vectorBytes(index, 1);
    return bytes === null ? null : bytes.toString('utf8');
  }

  /** A vector of fixed-size elements as a view of its bytes (no copy), or null when absent. */
  vectorBytes(index: number, elementSize: number): Buffer | null {
    const at = this.target(index);
    if (at === 0) return null;
    const length = this.buf.readUInt32LE(at);
    check(this.buf, at + 4, length * elementSize);
    return this.buf.subarray(at + 4, at + 4 + length * elementSize);
  }

  int32Vector(index: number): number[] {
    const bytes = this.vectorBytes(index, 4);
    const out: number[] = [];
    if (bytes) for (let i = 0; i < bytes.length; i += 4) out.push(bytes.readInt32LE(i));
    return out;
  }

  tableVector(index: number): Table[] {
    const at = this.target(index);
    if (at === 0) return [];
    const length = this.buf.readUInt32LE(at);
    check(this.buf, at + 4, length * 4);
    const out: Table[] = [];
    for (let i = 0; i < length; i++) {
      const slot = at + 4 + 4 * i;
      const to = slot + this.buf.readUInt32LE(slot);
      out.push(new Table(this.buf, to));
    }
    return out;
  }
}

function check(buf: Buffer, at: number, size: number): void {
  if (!Number.isSafeInteger(at) || at < 0 || size < 0 || at + size > buf.length) {
    throw new FlatBufferError(`offset ${at} (+${size}) is outside the ${buf.length}-byte buffer`);
  }
}

/** The root table; when `identifier` is given, bytes 4..8 must equal it. */
export function rootTable(buf: Buffer, identifier?: string): Table {
  check(buf, 0, 8);
  if (identifier !== undefined && buf.toString('latin1', 4, 8) !== identifier) {
    throw new FlatBufferError(`file identifier is "${buf.toString('latin1', 4, 8)}", expected "${identifier}"`);
  }
  return new Table(buf, buf.readUInt32LE(0));
}
