// Frame extraction for bc-legacy video, always in an ffmpeg child process: the service
// process never parses video. Hard limits on input size, duration, frame count, wall time
// and memory; only the MP4/MOV demuxer and the file protocol are allowed, so a hostile
// file cannot make ffmpeg read playlists, other files or the network.
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { VideoConfig } from '../config';

export class VideoError extends Error {}

/** The video settings (config's VideoConfig) but the number of ffmpeg children at once. */
export type FrameLimits = Omit<VideoConfig, 'concurrency'>;

interface RunResult {
  code: number | null;
  stderr: string;
}

function runFfmpeg(limits: FrameLimits, args: string[], signal?: AbortSignal): Promise<RunResult> {
  const ffmpeg = limits.ffmpegPath;
  if (ffmpeg === null) return Promise.reject(new VideoError('video needs ffmpeg, which is not installed here (set CATCOMFORT_FFMPEG to an ffmpeg binary).'));
  return new Promise((resolve, reject) => {
    // ulimit -v caps the child's address space and -t its CPU seconds (so it dies even if this
    // process is gone); exec keeps the pid so the kill reaches ffmpeg.
    const cpuSeconds = Math.ceil(limits.wallTimeMs / 1000) + 1;
    const script = `ulimit -v ${Math.floor(limits.memoryBytes / 1024)} && ulimit -t ${cpuSeconds} && exec "$0" "$@"`;
    const child = spawn('/bin/sh', ['-c', script, ffmpeg, ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
      ...(signal ? { signal, killSignal: 'SIGKILL' as const } : {}),
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 64 * 1024) stderr += chunk.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), limits.wallTimeMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      if (error.name === 'AbortError') reject(error);
      else reject(new VideoError(`ffmpeg could not be started: ${error.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (signal === 'SIGKILL') reject(new VideoError('Video processing took too long.'));
      else resolve({ code, stderr });
    });
  });
}

function parseDuration(stderr: string): number | null {
  const m = /Duration: (\d+):(\d\d):(\d\d(?:\.\d+)?)/.exec(stderr);
  if (!m) return null;
  return Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]);
}

const COMMON = ['-hide_banner', '-nostdin', '-threads', '1', '-protocol_whitelist', 'file', '-f', 'mov'];

/** Extracts up to `count` frames spread evenly over the clip, as JPEG bytes in time order. */
export async function extractFrames(video: Buffer, count: number, limits: FrameLimits, signal?: AbortSignal): Promise<Buffer[]> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'catcomfort-video-'));
  try {
    const input = path.join(dir, 'input.mp4');
    await writeFile(input, video);
    const probe = await runFfmpeg(limits, [...COMMON, '-i', input], signal);
    const duration = parseDuration(probe.stderr);
    if (duration === null || !/Stream #.*Video:/.test(probe.stderr)) throw new VideoError('Video could not be decoded.');
    if (duration > limits.maxSeconds) throw new VideoError(`Video is too long; at most ${limits.maxSeconds} seconds.`);
    const frames = Math.min(count, limits.maxFrames);
    const rate = frames / Math.max(duration, 0.001);
    const result = await runFfmpeg(limits, [
      ...COMMON, '-i', input, '-an', '-sn',
      '-vf', `fps=${rate.toFixed(6)}:round=down,scale='min(1920,iw)':-2`,
      '-frames:v', String(frames), '-q:v', '3', path.join(dir, 'frame-%04d.jpg'),
    ], signal);
    const names = (await readdir(dir)).filter((n) => n.startsWith('frame-')).sort();
    if (result.code !== 0 && names.length === 0) throw new VideoError('Video could not be decoded.');
    if (names.length === 0) throw new VideoError('Video has no frames.');
    // Awaited here, inside the try: the folder is removed only after every frame has been read.
    return await Promise.all(names.map((n) => readFile(path.join(dir, n))));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
