// 12 MP phone photos: JPEGs decoded with shrink-on-load (native/pipeline.cc) give the answers of a
// full-size decode, in source pixels, with EXIF orientation applied. The photos are made from the
// shared chelsea photo (451x300) with ffmpeg at test time.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadPack, type LoadedPack } from '../src/packs/pack';
import { loadAddon, type ItemSuccess, type NativeAddon, type NativePipeline } from '../src/native/addon';
import { postJson } from './helpers/http';
import { repoRoot, photo } from './helpers/paths';
import { ffmpegJpeg, withExifOrientation } from './helpers/phone-jpeg';
import { startServer } from './helpers/server';

const CHELSEA = photo('000_skimage_chelsea.png'); // 451x300
const UPSCALE = 'scale=4000:3000';

let addon: NativeAddon;
let pack: LoadedPack;
let shrunk: NativePipeline;
let fullSize: NativePipeline;
const photos: Record<string, Buffer> = {};

before(async () => {
  addon = loadAddon();
  addon.configure({ providers: ['cpu'], deviceId: 0, trtCacheDir: '', trtFp16: false, poolThreads: 2, intraOpThreads: 1 });
  const limits = { maxPixels: 40_000_000, batching: { maxBatchSize: 1, maxQueueDelayUs: 0, maxQueue: 1, maxInFlight: 1 }, sessionBatch: 1 };
  const dir = path.join(repoRoot, 'models/bc-v1');
  pack = await loadPack(dir, limits);
  shrunk = await addon.createPipeline(pack.spec);
  fullSize = await addon.createPipeline((await loadPack(dir, { ...limits, jpegShrinkOnLoad: false })).spec);
  photos.upscale = ffmpegJpeg(CHELSEA, UPSCALE);
  // Stored as a phone stores a portrait shot: pixels turned 90° counter-clockwise (3000x4000),
  // EXIF Orientation 6 says "turn clockwise to show".
  photos.exifRotated = withExifOrientation(ffmpegJpeg(CHELSEA, `${UPSCALE},transpose=2`), 6);
  // The cat in the middle of a grey 4000x3000 frame, too small for a 224 crop at 1/8 scale.
  photos.smallCat = ffmpegJpeg(CHELSEA, 'scale=1600:1066,pad=4000:3000:(ow-iw)/2:(oh-ih)/2:color=gray');
});
after(() => {
  addon.releasePipeline(shrunk);
  addon.releasePipeline(fullSize);
});

async function analyze(pipeline: NativePipeline, data: Buffer): Promise<ItemSuccess> {
  const [result] = await addon.analyze(pipeline, [{ data, encoding: 'bytes' }]);
  assert.ok(result?.ok, JSON.stringify(result));
  return result;
}

function detection(r: ItemSuccess): string {
  const c = r.cat?.confidence ?? 0;
  return c >= pack.manifest.cutoffs.detected ? 'detected' : c >= pack.manifest.cutoffs.lowConfidence ? 'low_confidence' : 'not_detected';
}

/** Every box coordinate within `fraction` of the image side along its axis. */
function assertBoxNear(actual: number[], expected: number[], width: number, height: number, fraction: number, what: string) {
  actual.forEach((v, i) => {
    const side = i % 2 === 0 ? width : height;
    assert.ok(Math.abs(v - expected[i]!) <= fraction * side, `${what}: box ${actual} vs ${expected.map(Math.round)}`);
  });
}

describe('12 MP JPEGs decoded with shrink-on-load', () => {
  test('a 4000x3000 upscale of chelsea: the original photo\'s detection outcome, its box scaled within 3 %', async () => {
    const original = await analyze(shrunk, readFileSync(CHELSEA));
    const big = await analyze(shrunk, photos.upscale!);
    assert.equal(big.width, 4000);
    assert.equal(big.height, 3000);
    assert.equal(detection(big), detection(original));
    assert.equal(detection(big), 'detected');
    const [x1, y1, x2, y2] = original.cat!.box;
    const scaled = [(x1 * 4000) / 451, (y1 * 3000) / 300, (x2 * 4000) / 451, (y2 * 3000) / 300];
    assertBoxNear(big.cat!.box, scaled, 4000, 3000, 0.03, 'upscale');
    assert.notEqual(big.score, null);
  });

  // The score moves a little with the crop's resampling (a shrunk decode is resized less): the
  // ImageNet backbone under the head sees that blur, so 0.03 rather than the box's 1 %.
  test('the same answers as a full-size decode: detection, box within 1 %, score within 0.03', async () => {
    for (const [name, jpeg] of Object.entries(photos)) {
      const a = await analyze(shrunk, jpeg);
      const b = await analyze(fullSize, jpeg);
      assert.deepEqual([a.width, a.height], [b.width, b.height], name);
      assert.equal(detection(a), detection(b), name);
      assert.equal(detection(a), 'detected', name);
      assertBoxNear(a.cat!.box, b.cat!.box, a.width, a.height, 0.01, name);
      assert.ok(Math.abs(a.score! - b.score!) <= 0.03, `${name}: score ${a.score} vs ${b.score}`);
    }
  });

  test('EXIF orientation still applied: the rotated file is 4000x3000 upright, with the upright file\'s box', async () => {
    const upright = await analyze(shrunk, photos.upscale!);
    const rotated = await analyze(shrunk, photos.exifRotated!);
    assert.deepEqual([rotated.width, rotated.height], [4000, 3000]);
    assertBoxNear(rotated.cat!.box, upright.cat!.box, 4000, 3000, 0.01, 'rotated');
  });

  test('v1 and v2 report the source size and a box in source pixels', async () => {
    const server = await startServer({ CATCOMFORT_PRECISION: 'fp32' }); // the precision of the in-process pipelines above
    try {
      const image = photos.upscale!.toString('base64');
      const expected = await analyze(shrunk, photos.upscale!);
      const v2 = await postJson(`${server.url}/v2/predict`, { image });
      assert.equal(v2.status, 200, v2.text);
      assert.deepEqual(v2.body.image, { width: 4000, height: 3000 });
      const b = v2.body.cat.bounding_box;
      assert.deepEqual([b.x_min, b.y_min, b.x_max, b.y_max], expected.cat!.box);
      const v1 = await postJson(`${server.url}/invocations`, { media_type: 'image', media_data: { image } });
      assert.equal(v1.status, 200, v1.text);
      assert.equal(v1.body.additional_data.input_dimensions, '4000x3000');
      assert.deepEqual(v1.body.additional_data.bounding_box_cat, [{ x1: b.x_min, y1: b.y_min, x2: b.x_max, y2: b.y_max }]);
    } finally {
      await server.stop();
    }
  });
});
