// A small H.264 MP4 made at test time by the bundled ffmpeg from two fixture photos (a cat, then coffee).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ffmpegFor } from '../../src/config';
import { photo } from './paths';

export function catVideo(): Buffer {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cc-video-'));
  try {
    const mp4 = path.join(dir, 'cat.mp4');
    execFileSync(ffmpegFor('the tests'), [
      '-v', 'error', '-y', '-loop', '1', '-t', '2', '-i', photo('000_skimage_chelsea.png'), '-loop', '1', '-t', '2', '-i', photo('111_skimage_coffee.png'),
      '-filter_complex', '[0]scale=450:300,setsar=1[a];[1]scale=450:300,setsar=1[b];[a][b]concat=n=2:v=1[v]',
      '-map', '[v]', '-r', '5', '-pix_fmt', 'yuv420p', '-c:v', 'libx264', mp4,
    ]);
    return readFileSync(mp4);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
