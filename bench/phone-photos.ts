// 12 MP "phone photos" for the benchmarks: every fixture photo scaled to about 12 megapixels
// (aspect ratio kept, e.g. 4000x3000 for 4:3) as a 4:2:0 JPEG, as a phone camera writes it. Made
// with the bundled ffmpeg at bench time into bench/results/tmp/phone/ (gitignored, never
// committed) and reused while the fixture's sha256 is the same.
import { existsSync, mkdirSync, renameSync } from 'node:fs';
import path from 'node:path';
import { ffmpegFor } from '../src/config';
import { fixturePhotos, log, runCommand, tmpDir, type Photo } from './common';

const PIXELS = 12_000_000;

export async function phonePhotos(): Promise<Photo[]> {
  const dir = path.join(tmpDir, 'phone');
  mkdirSync(dir, { recursive: true });
  const ffmpeg = ffmpegFor('the phone-photo benchmark (its 12 MP JPEGs)');
  const out: Photo[] = [];
  let made = 0;
  for (const p of fixturePhotos()) {
    const scale = Math.sqrt(PIXELS / (p.width * p.height));
    const width = 2 * Math.round((p.width * scale) / 2);
    const height = 2 * Math.round((p.height * scale) / 2);
    const file = `${path.parse(p.file).name}_${p.sha256.slice(0, 8)}_${width}x${height}.jpg`;
    const target = path.join(dir, file);
    if (!existsSync(target)) {
      const partial = `${target}.${process.pid}.partial.jpg`; // two benches may make the same photo at once
      await runCommand(
        ffmpeg,
        ['-hide_banner', '-loglevel', 'error', '-y', '-i', p.path, '-vf', `scale=${width}:${height}`, '-pix_fmt', 'yuvj420p', '-q:v', '3', '-frames:v', '1', partial],
        { label: 'ffmpeg' },
      );
      renameSync(partial, target);
      made++;
    }
    out.push({ ...p, file, path: target, width, height });
  }
  if (made > 0) log(`  made ${made} phone-size JPEGs (about 12 MP) in ${path.relative(process.cwd(), dir)}`);
  return out;
}
