// Frame extraction for bc-legacy video, with the bundled ffmpeg on a real MP4.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import fsp from 'node:fs/promises';
import { mock, test } from 'node:test';
import { ffmpegFor, loadConfig } from '../src/config';
import { extractFrames, VideoError } from '../src/v1/frames';
import { catVideo } from './helpers/video';

const limits = { ffmpegPath: ffmpegFor('the tests'), maxSeconds: 300, maxFrames: 60, wallTimeMs: 20_000, memoryBytes: 1024 * 1024 * 1024 };

test('frames are read completely before their temporary folder is removed', async (t) => {
  // Every frame read yields once and, if the folder's removal has begun by then, waits for it
  // to finish: a removal that does not wait for the reads then fails them every time.
  const originalRm = fsp.rm;
  const originalRead = fsp.readFile;
  let removal: Promise<void> | null = null;
  const removedDirs: string[] = [];
  t.after(() => mock.restoreAll());
  mock.method(fsp, 'rm', (target: string, options: object) => {
    removedDirs.push(target);
    removal = originalRm(target, options);
    return removal;
  });
  mock.method(fsp, 'readFile', async (file: string) => {
    await Promise.resolve();
    if (removal) await removal;
    return originalRead(file);
  });

  const frames = await extractFrames(catVideo(), 4, limits);
  assert.equal(frames.length, 4);
  for (const frame of frames) assert.deepEqual([...frame.subarray(0, 2)], [0xff, 0xd8], 'a JPEG');
  assert.equal(removedDirs.length, 1);
  assert.equal(existsSync(removedDirs[0]!), false, 'the temporary folder is removed afterwards');
});

test('without ffmpeg (none configured, its npm package absent) video gets a clear VideoError; nothing is spawned', async () => {
  await assert.rejects(extractFrames(catVideo(), 4, { ...limits, ffmpegPath: null }), (error: Error) => {
    assert.ok(error instanceof VideoError);
    assert.match(error.message, /video needs ffmpeg, which is not installed here \(set CATCOMFORT_FFMPEG/);
    return true;
  });
  assert.equal(loadConfig({ CATCOMFORT_FFMPEG: '/opt/ffmpeg' }).video.ffmpegPath, '/opt/ffmpeg');
});
