// Phone-size JPEGs made from fixture photos at test time (nothing big is committed): an ffmpeg
// scale, and optionally an EXIF orientation as phone cameras store portrait shots.
import { execFileSync } from 'node:child_process';
import { ffmpegFor } from '../../src/config';

/** `source` through the ffmpeg video filter `filter`, as a 4:2:0 JPEG (like a camera's). */
export function ffmpegJpeg(source: string, filter: string): Buffer {
  return execFileSync(
    ffmpegFor('the tests'),
    ['-hide_banner', '-loglevel', 'error', '-i', source, '-vf', filter, '-pix_fmt', 'yuvj420p', '-q:v', '3', '-frames:v', '1', '-f', 'image2pipe', '-c:v', 'mjpeg', 'pipe:1'],
    { maxBuffer: 64 * 1024 * 1024 },
  );
}

/** The JPEG with an EXIF segment (APP1) holding only the Orientation tag, right after SOI. */
export function withExifOrientation(jpeg: Buffer, orientation: number): Buffer {
  // Big-endian TIFF header, one IFD with one entry: tag 0x0112 (Orientation), SHORT, count 1.
  const tiff = Buffer.alloc(26);
  tiff.write('MM', 0, 'latin1');
  tiff.writeUInt16BE(42, 2);
  tiff.writeUInt32BE(8, 4); // offset of the IFD
  tiff.writeUInt16BE(1, 8); // entries
  tiff.writeUInt16BE(0x0112, 10);
  tiff.writeUInt16BE(3, 12);
  tiff.writeUInt32BE(1, 14);
  tiff.writeUInt16BE(orientation, 18); // the value, padded to 4 bytes; then next-IFD offset 0
  const payload = Buffer.concat([Buffer.from('Exif\0\0', 'latin1'), tiff]);
  const marker = Buffer.from([0xff, 0xe1, 0, 0]);
  marker.writeUInt16BE(payload.length + 2, 2);
  return Buffer.concat([jpeg.subarray(0, 2), marker, payload, jpeg.subarray(2)]);
}
