// Minimal PNG writer for test inputs the fixtures do not cover (16-bit, huge headers, edited copies),
// and a minimal decoder for 8-bit RGB, non-interlaced PNGs (the shared PNG photos): pixels exactly as
// stored, no gamma or colour-profile handling, like Pillow's plain decode.
import { crc32, deflateSync, inflateSync } from 'node:zlib';

function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])) >>> 0, 0);
  return Buffer.concat([head, data, crc]);
}

/** An RGB PNG of the given bit depth filled with a gradient. */
export function makePng(width: number, height: number, bitDepth: 8 | 16): Buffer {
  const bytesPerPixel = 3 * (bitDepth / 8);
  const rows: Buffer[] = [];
  for (let y = 0; y < height; y++) {
    const row = Buffer.alloc(1 + width * bytesPerPixel);
    for (let x = 0; x < width; x++) {
      for (let c = 0; c < 3; c++) {
        const value = ((x * 7 + y * 3 + c * 50) % 256) * (bitDepth === 16 ? 257 : 1);
        if (bitDepth === 16) row.writeUInt16BE(value, 1 + x * bytesPerPixel + c * 2);
        else row[1 + x * bytesPerPixel + c] = value;
      }
    }
    rows.push(row);
  }
  return pngFromParts(width, height, bitDepth, deflateSync(Buffer.concat(rows)));
}

/** An 8-bit RGB PNG of the given interleaved pixels (width * height * 3 bytes). */
export function encodeRgbPng(width: number, height: number, rgb: Buffer): Buffer {
  const raw = Buffer.alloc((width * 3 + 1) * height); // filter byte 0 (none) per row
  for (let y = 0; y < height; y++) rgb.copy(raw, y * (width * 3 + 1) + 1, y * width * 3, (y + 1) * width * 3);
  return pngFromParts(width, height, 8, deflateSync(raw));
}

/** A PNG whose header claims width x height but whose data is tiny (a decompression-bomb shape). */
export function makeHugeHeaderPng(width: number, height: number): Buffer {
  return pngFromParts(width, height, 8, deflateSync(Buffer.alloc(16)));
}

function pngFromParts(width: number, height: number, bitDepth: number, idat: Buffer): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = bitDepth;
  ihdr[9] = 2; // truecolour
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', idat),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

export interface RgbPixels {
  width: number;
  height: number;
  /** width * height * 3, row-major, R G B. */
  data: Uint8Array;
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

export function decodeRgbPng(file: Buffer): RgbPixels {
  if (file.toString('latin1', 1, 4) !== 'PNG') throw new Error('not a PNG');
  let pos = 8;
  let width = 0;
  let height = 0;
  const idat: Buffer[] = [];
  while (pos < file.length) {
    const length = file.readUInt32BE(pos);
    const type = file.toString('latin1', pos + 4, pos + 8);
    const body = file.subarray(pos + 8, pos + 8 + length);
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      const [depth, colour, , , interlace] = [body[8], body[9], body[10], body[11], body[12]];
      if (depth !== 8 || colour !== 2 || interlace !== 0) throw new Error('only 8-bit RGB, non-interlaced PNGs');
    } else if (type === 'IDAT') idat.push(body);
    else if (type === 'IEND') break;
    pos += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * 3;
  const out = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; i++) {
      const a = i >= 3 ? out[y * stride + i - 3]! : 0;
      const b = y > 0 ? out[(y - 1) * stride + i]! : 0;
      const c = i >= 3 && y > 0 ? out[(y - 1) * stride + i - 3]! : 0;
      const predictor = [0, a, b, (a + b) >> 1, paeth(a, b, c)][filter];
      if (predictor === undefined) throw new Error(`bad PNG filter ${filter}`);
      out[y * stride + i] = (line[i]! + predictor) & 0xff;
    }
  }
  return { width, height, data: out };
}
