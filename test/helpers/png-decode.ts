// Minimal PNG decoder for tests: 8-bit RGB, not interlaced (the shared PNG photos). Pixels
// exactly as stored: no gamma or colour-profile handling, like Pillow's plain decode.
import { inflateSync } from 'node:zlib';

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
