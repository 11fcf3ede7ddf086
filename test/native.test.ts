// Tests of the native addon (build/Release/catcomfort.node) on real files.
// Build first: npm run build:native && npm run build:ts; run: node --test dist/test/native.test.js
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  loadAddon,
  type AnalyzeItem,
  describeFailure,
  type ItemFailure,
  type ItemResult,
  type ItemSuccess,
  type NativeAddon,
  type NativeConfig,
  type NativePipeline,
  type PipelineSpec,
  type PreprocessSpec,
} from '../src/native/addon';
import { withDynamicBatch } from '../src/graphs/onnx/batch';
import { iou } from '../src/tools/iou';
import { fixture, modelMirror, photoEntry, repoRoot } from './helpers/paths';
import { decodeRgbPng, encodeRgbPng, makeHugeHeaderPng } from './helpers/png';
import { seededRandom } from '../src/train/evaluate';
import { v1Base64Message } from '../src/v1/respond';

const detectorPath = path.join(modelMirror, 'yolox-nano/yolox_nano.onnx');
const classifierPath = path.join(repoRoot, 'models/bc-legacy/classifier.onnx');

const DETECTED = 0.69; // models/bc-v1/manifest.json cutoffs.detected
const MAX_PIXELS = 40_000_000;

const detectorPreprocess: PreprocessSpec = {
  width: 416,
  height: 416,
  resize: 'letterbox',
  anchor: 'top-left',
  padValue: 114,
  channelOrder: 'bgr',
  layout: 'nchw',
  scale: 1,
  mean: [0, 0, 0],
  std: [1, 1, 1],
};

const classifierPreprocess: PreprocessSpec = {
  width: 224,
  height: 224,
  resize: 'stretch',
  anchor: 'center',
  padValue: 0,
  channelOrder: 'rgb',
  layout: 'nchw',
  scale: 1 / 255,
  mean: [0.485, 0.456, 0.406],
  std: [0.229, 0.224, 0.225],
};

const config: NativeConfig = {
  providers: ['tensorrt', 'cuda', 'cpu'],
  deviceId: 0,
  trtCacheDir: path.join(repoRoot, 'data/trt-cache'),
  trtFp16: true,
  poolThreads: 2,
  intraOpThreads: 1,
};

function spec(detector: Buffer, views: PipelineSpec['detector']['views'], maxSessionBatch = 8): PipelineSpec {
  return {
    detector: {
      model: detector,
      preprocess: detectorPreprocess,
      output: { format: 'yolox', strides: [8, 16, 32], numClasses: 80, catClassIndex: 15 },
      scoreFloor: 0.05,
      nmsIou: 0.45,
      views,
      viewCombine: 'max',
      calibration: [],
    },
    classifier: {
      model: fs.readFileSync(classifierPath),
      preprocess: classifierPreprocess,
      cropMargin: 0.1,
      outputIndex: 0,
    },
    cutoffs: { detected: 0.5, lowConfidence: 0.3 },
    maxPixels: MAX_PIXELS,
    maxSessionBatch,
    jpegShrinkOnLoad: true,
  };
}

/** The YOLOX file as published has a fixed batch of 1: the product's dynamic-batch patch. */
const batchedYolox = (model: Buffer): Buffer => withDynamicBatch(model, [1, 85, -1], [0, 85, -1]);

/** The PNG mirrored left-right. */
function mirroredPng(png: Buffer): Buffer {
  const { width, height, data } = decodeRgbPng(png);
  const out = Buffer.alloc(data.length);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) out.set(data.subarray((y * width + x) * 3, (y * width + x) * 3 + 3), (y * width + width - 1 - x) * 3);
  }
  return encodeRgbPng(width, height, out);
}

/** Deterministic pseudo-random bytes. */
function randomBytes(length: number, seed: number): Buffer {
  const next = seededRandom(seed);
  return Buffer.from(Array.from({ length }, () => Math.floor(next() * 256)));
}

function ok(result: ItemResult | undefined): ItemSuccess {
  assert.ok(result, 'a result');
  if (!result.ok) assert.fail(`expected success, got ${describeFailure(result)}`);
  return result;
}

function failure(result: ItemResult | undefined, code: string): ItemFailure {
  assert.ok(result, 'a result');
  if (result.ok) assert.fail(`expected ${code}, got success`);
  assert.equal(result.code, code, describeFailure(result));
  return result;
}

function photo(file: string) {
  const entry = photoEntry(file);
  return { bytes: fs.readFileSync(entry.path), entry };
}

describe('native addon', () => {
  let addon: NativeAddon;
  let detectorBytes: Buffer;
  let pipeline: NativePipeline; // fixed-batch detector (the file as published), 4 views
  const chelsea = photo('000_skimage_chelsea.png');
  const coffee = photo('111_skimage_coffee.png');
  const chelseaJpeg = fixture('chelsea.jpg');
  const analyzeOne = async (item: AnalyzeItem, p: NativePipeline = pipeline): Promise<ItemResult> => {
    const results = await addon.analyze(p, [item]);
    assert.equal(results.length, 1);
    return results[0] as ItemResult;
  };

  before(async () => {
    addon = loadAddon();
    detectorBytes = fs.readFileSync(detectorPath);
    addon.configure(config);
    pipeline = await addon.createPipeline(spec(detectorBytes, ['plain', 'flip', 'half', 'half_flip']));
  });

  after(() => {
    addon.releasePipeline(pipeline);
  });

  test('configure reports versions and provider status, once per process', () => {
    const info = addon.configure(config); // same config: same answer
    assert.match(info.vipsVersion, /^8\.\d+\.\d+/);
    assert.match(info.ortVersion, /^1\.\d+\.\d+/);
    assert.deepEqual(
      info.providers.map((p) => p.name),
      ['tensorrt', 'cuda', 'cpu'],
    );
    const cpu = info.providers[2];
    assert.deepEqual(cpu, { name: 'cpu', active: true, reason: null });
    for (const p of info.providers) {
      if (p.active) assert.equal(p.reason, null);
      else assert.ok(typeof p.reason === 'string' && p.reason.length > 0, `${p.name} has a skip reason`);
    }
    assert.throws(
      () => addon.configure({ ...config, poolThreads: 3 }),
      (e: Error & { code?: string }) => e.code === 'native_error' && /already/.test(e.message),
    );
    assert.throws(
      () => addon.configure({ ...config, cudnnConvAlgoSearch: 'FASTEST' as 'DEFAULT' }),
      (e: Error & { code?: string }) => e.code === 'native_error' && /cudnnConvAlgoSearch must be/.test(e.message),
    );
    assert.throws(
      () => addon.configure({ ...config, pinnedMemory: false }),
      (e: Error & { code?: string }) => e.code === 'native_error' && /already/.test(e.message),
      'pinnedMemory is part of the process-wide configuration',
    );
    assert.throws(
      () => addon.configure({ ...config, cpuArena: true }),
      (e: Error & { code?: string }) => e.code === 'native_error' && /already/.test(e.message),
      'cpuArena is part of the process-wide configuration',
    );
  });

  test('detection is decided once, natively, on the reported 6-decimal confidence; cutoffs are inclusive', async () => {
    const base = ok(await analyzeOne({ data: chelsea.bytes, encoding: 'bytes' }));
    assert.ok(base.cat);
    const c = base.cat.confidence;
    assert.equal(c, Math.round(c * 1e6) / 1e6, 'the confidence carries 6 decimals');
    const withCutoffs = async (detected: number, lowConfidence: number) => {
      const p = await addon.createPipeline({ ...spec(detectorBytes, ['plain', 'flip', 'half', 'half_flip']), cutoffs: { detected, lowConfidence } });
      try {
        return ok(await analyzeOne({ data: chelsea.bytes, encoding: 'bytes' }, p));
      } finally {
        addon.releasePipeline(p);
      }
    };
    const at = await withCutoffs(c, c - 0.1);
    assert.equal(at.detection, 'detected');
    assert.ok(at.score !== null && at.score === Math.round(at.score * 1e6) / 1e6, 'classified, score with 6 decimals');
    const justBelow = await withCutoffs(c + 1e-6, c);
    assert.deepEqual([justBelow.detection, justBelow.score], ['low_confidence', null]);
    const below = await withCutoffs(1, c + 1e-6);
    assert.deepEqual([below.detection, below.score], ['not_detected', null]);
  });

  test('chelsea: a confident cat where the manifest says, and a classifier score', async () => {
    const r = ok(await analyzeOne({ data: chelsea.bytes, encoding: 'bytes' }));
    assert.equal(r.width, 451);
    assert.equal(r.height, 300);
    assert.ok(r.cat, 'a cat');
    assert.ok(r.cat.confidence >= DETECTED, `confidence ${r.cat.confidence}`);
    assert.equal(r.cat.confidence, Math.round(r.cat.rawScore * 1e6) / 1e6, 'empty calibration is the identity (reported with 6 decimals)');
    for (const v of r.cat.box) assert.ok(Number.isInteger(v));
    const [x1, y1, x2, y2] = r.cat.box;
    assert.ok(x1 >= 0 && y1 >= 0 && x2 <= 451 && y2 <= 300 && x1 < x2 && y1 < y2, `box ${r.cat.box}`);
    assert.ok(chelsea.entry.box);
    assert.ok(iou(r.cat.box, chelsea.entry.box) > 0.5, `box ${r.cat.box} vs ${chelsea.entry.box}`);
    assert.ok(r.score !== null && r.score >= 0 && r.score <= 1, `score ${r.score}`);
    assert.ok(r.timings.decodeMs > 0 && r.timings.detectMs > 0 && r.timings.classifyMs > 0);
  });

  test('coffee: no confident cat, no classifier score', async () => {
    const r = ok(await analyzeOne({ data: coffee.bytes, encoding: 'bytes' }));
    assert.equal(r.width, 600);
    assert.equal(r.height, 400);
    assert.ok(r.cat === null || r.cat.confidence < DETECTED, JSON.stringify(r.cat));
    if (r.cat === null || r.cat.confidence < 0.5) {
      assert.equal(r.score, null);
      assert.equal(r.timings.classifyMs, 0);
    }
  });

  test('formats: JPEG, WebP, GIF, TIFF, CMYK JPEG, grey JPEG, PNG with alpha, EXIF rotation', async () => {
    const cases: Array<[string, number, number]> = [
      ['chelsea.jpg', 451, 300],
      ['chelsea.webp', 451, 300],
      ['chelsea_cmyk.jpg', 451, 300],
      ['chelsea_grey.jpg', 451, 300],
      ['chelsea_half.gif', 226, 150],
      ['chelsea_half.tiff', 226, 150],
      ['chelsea_half_alpha.png', 226, 150],
      ['chelsea_orient6.jpg', 451, 300], // stored 300x451 with orientation 6
    ];
    const results = await addon.analyze(
      pipeline,
      cases.map(([file]) => ({ data: fixture(file), encoding: 'bytes' })),
    );
    assert.equal(results.length, cases.length);
    cases.forEach(([file, width, height], i) => {
      const r = ok(results[i]);
      assert.equal(r.width, width, file);
      assert.equal(r.height, height, file);
      assert.ok(r.cat && r.cat.confidence >= DETECTED, `${file}: ${JSON.stringify(r.cat)}`);
      const scale = width / 451;
      const expected = (chelsea.entry.box ?? [0, 0, 0, 0]).map((v) => v * scale);
      assert.ok(iou(r.cat.box, expected) > 0.5, `${file}: box ${r.cat.box}`);
    });
  });

  test('16-bit PNG is unsupported_format', async () => {
    failure(
      await analyzeOne({ data: fixture('chelsea_16bit.png'), encoding: 'bytes' }),
      'unsupported_format',
    );
  });

  test('truncated JPEG, random bytes and empty input', async () => {
    const results = await addon.analyze(pipeline, [
      { data: chelseaJpeg.subarray(0, Math.floor(chelseaJpeg.length * 0.6)), encoding: 'bytes' },
      { data: randomBytes(20_000, 42), encoding: 'bytes' },
      { data: Buffer.alloc(0), encoding: 'bytes' },
      { data: '', encoding: 'base64-strict' },
      { data: '', encoding: 'base64-lenient' },
      { data: 'data:image/png;base64,', encoding: 'base64-strict' },
      { data: Buffer.from('GIF89a'), encoding: 'bytes' },
    ]);
    failure(results[0], 'undecodable');
    failure(results[1], 'undecodable');
    failure(results[2], 'empty_image');
    failure(results[3], 'empty_image');
    failure(results[4], 'empty_image');
    failure(results[5], 'empty_image');
    failure(results[6], 'undecodable');
  });

  test('a header claiming 30000x30000 is too_many_pixels before any decoding', async () => {
    // The pixel data is a few bytes, so decoding fails (control: the same under the limit is
    // undecodable); too_many_pixels can only come from the header.
    failure(await analyzeOne({ data: makeHugeHeaderPng(6000, 6000), encoding: 'bytes' }), 'undecodable');
    failure(
      await analyzeOne({ data: makeHugeHeaderPng(30000, 30000), encoding: 'bytes' }),
      'too_many_pixels',
    );
    // Same check through base64.
    failure(
      await analyzeOne({ data: makeHugeHeaderPng(20000, 2001).toString('base64'), encoding: 'base64-strict' }),
      'too_many_pixels',
    );
  });

  test('strict base64 (v2)', async () => {
    const b64 = chelseaJpeg.toString('base64');
    assert.ok(b64.endsWith('='), 'the fixture needs padding for these cases');
    const withNewlines = b64.replace(/.{76}/g, '$&\n');
    const cases: Array<[string, string | null]> = [
      [b64, null],
      [`data:image/jpeg;base64,${b64}`, null],
      [`data:image/svg+xml;base64,${b64}`, null], // the prefix's type is not checked against the data
      [`data:image/JPEG;base64,${b64}`, 'invalid_base64'], // type is lower case
      [`data:text/plain;base64,${b64}`, 'invalid_base64'],
      [`data:image/jpeg,${b64}`, 'invalid_base64'],
      [withNewlines, 'invalid_base64'],
      [` ${b64}`, 'invalid_base64'],
      [b64.replace(/=+$/, ''), 'invalid_base64'], // missing padding
      [`${b64}=`, 'invalid_base64'],
      [b64.replace(/\+/g, '-').replace(/\//g, '_'), 'invalid_base64'], // URL-safe alphabet
      ['YW=j', 'invalid_base64'], // '=' before the end
      ['Y===', 'invalid_base64'],
      ['YWJj', 'undecodable'], // valid base64 of "abc"
      ['YQ==', 'undecodable'],
      // One bad character deep inside (the vectorised blocks) or in the last whole quad.
      [`${b64.slice(0, 1000)}!${b64.slice(1001)}`, 'invalid_base64'],
      [`${b64.slice(0, 1001)}\u0080${b64.slice(1002)}`, 'invalid_base64'],
      [`${b64.slice(0, 1002)}=${b64.slice(1003)}`, 'invalid_base64'],
      [`${b64.slice(0, b64.length - 5)}-${b64.slice(b64.length - 4)}`, 'invalid_base64'],
    ];
    const results = await addon.analyze(
      pipeline,
      cases.map(([data]) => ({ data, encoding: 'base64-strict' })),
    );
    cases.forEach(([data, code], i) => {
      const r = results[i];
      if (code === null) {
        const s = ok(r);
        assert.equal(s.width, 451, data.slice(0, 40));
      } else {
        const f = failure(r, code);
        assert.equal(f.reason, undefined, 'strict base64 failures have no lenient reason');
      }
    });
  });

  test("lenient base64 (v1) follows Python's base64.b64decode", async () => {
    const b64 = chelseaJpeg.toString('base64');
    // Expected outcomes checked against python3 3.11: base64.b64decode(s) raising binascii.Error
    // or ValueError -> invalid_base64; b'' -> empty_image; other bytes (not an image) -> undecodable.
    const python: Array<[string, string]> = [
      ['YWJj', 'undecodable'], // b'abc'
      ['YWJjZA==', 'undecodable'], // b'abcd'
      ['YWJjZA=', 'invalid_base64'], // Incorrect padding
      ['YWJjZA', 'invalid_base64'], // Incorrect padding
      ['YW Jj\nZA==', 'undecodable'], // whitespace skipped
      ['YWJj!ZA==', 'undecodable'], // junk skipped
      ['YQ=x=', 'undecodable'], // b'a\x0c'
      ['YQ==YWJj', 'undecodable'], // b'a': stops at the complete pad
      ['YWJjZ', 'invalid_base64'], // 1 more than a multiple of 4
      ['====', 'empty_image'], // b''
      ['A', 'invalid_base64'],
      ['AB', 'invalid_base64'],
      ['YWJ-', 'invalid_base64'], // '-' skipped -> Incorrect padding
      ['YW_j', 'invalid_base64'],
      ['  ', 'empty_image'],
      ['YWJjZA===', 'undecodable'],
      ['=YWJj', 'undecodable'],
      ['YWJj\u00e9', 'invalid_base64'], // ValueError: non-ASCII str
    ];
    const images: Array<[string, string | null]> = [
      [b64, null],
      [b64.replace(/.{76}/g, '$&\r\n'), null], // MIME line breaks
      [`data:image/jpeg;base64,${b64}`, 'undecodable'], // 'data', 'image', 'jpeg', 'base64' are alphabet chars
      [`${b64}!!garbage`, null], // everything after the complete pad is ignored
      [b64.replace(/=+$/, ''), 'invalid_base64'], // Python requires the padding
    ];
    const all = [...python, ...images];
    const results = await addon.analyze(
      pipeline,
      all.map(([data]) => ({ data, encoding: 'base64-lenient' })),
    );
    all.forEach(([data, code], i) => {
      if (code === null) assert.equal(ok(results[i]).width, 451, data.slice(0, 40));
      else failure(results[i], code);
    });
    // A Buffer holding base64 text: non-ASCII bytes are skipped (Python accepts bytes).
    failure(await analyzeOne({ data: Buffer.from([0x59, 0x57, 0xe9, 0x4a, 0x6a]), encoding: 'base64-lenient' }), 'undecodable');
    ok(await analyzeOne({ data: Buffer.from(b64, 'latin1'), encoding: 'base64-lenient' }));
  });

  test('a batch with bad items keeps per-item results in order', async () => {
    const items: AnalyzeItem[] = [
      { data: chelsea.bytes, encoding: 'bytes' },
      { data: 'not base64!', encoding: 'base64-strict' },
      { data: coffee.bytes.toString('base64'), encoding: 'base64-strict' },
      { data: randomBytes(1000, 7), encoding: 'bytes' },
      { data: chelseaJpeg.toString('base64'), encoding: 'base64-lenient' },
    ];
    const results = await addon.analyze(pipeline, items);
    assert.equal(results.length, 5);
    assert.ok(ok(results[0]).cat);
    failure(results[1], 'invalid_base64');
    assert.equal(ok(results[2]).width, 600);
    failure(results[3], 'undecodable');
    assert.equal(ok(results[4]).width, 451);
    assert.deepEqual(await addon.analyze(pipeline, []), []);
  });

  test('a batched detector (dynamic N, several images per Run) gives the same answers', async () => {
    const batched = await addon.createPipeline(spec(batchedYolox(detectorBytes), ['plain', 'flip', 'half', 'half_flip'], 3));
    try {
      const items: AnalyzeItem[] = [
        { data: chelsea.bytes, encoding: 'bytes' },
        { data: coffee.bytes, encoding: 'bytes' },
        { data: fixture('chelsea_cmyk.jpg'), encoding: 'bytes' },
      ];
      const [a, b] = await Promise.all([addon.analyze(pipeline, items), addon.analyze(batched, items)]);
      items.forEach((_, i) => {
        const x = ok(a[i]);
        const y = ok(b[i]);
        assert.equal(x.cat === null, y.cat === null);
        if (x.cat && y.cat) {
          assert.deepEqual(x.cat.box, y.cat.box);
          assert.ok(Math.abs(x.cat.rawScore - y.cat.rawScore) < 1e-4);
        }
        assert.equal(x.score === null, y.score === null);
        if (x.score !== null && y.score !== null) assert.ok(Math.abs(x.score - y.score) < 1e-4);
      });
    } finally {
      addon.releasePipeline(batched);
    }
  });

  test('views: a single plain view, and calibration', async () => {
    const plain = await addon.createPipeline({
      ...spec(detectorBytes, ['plain']),
      detector: { ...spec(detectorBytes, ['plain']).detector, calibration: [[0, 0], [0.5, 0.8], [1, 1]] },
    });
    try {
      const r = ok(await analyzeOne({ data: chelsea.bytes, encoding: 'bytes' }, plain));
      assert.ok(r.cat);
      const raw = r.cat.rawScore;
      const expected = raw <= 0.5 ? raw * 1.6 : 0.8 + (raw - 0.5) * 0.4;
      assert.equal(r.cat.confidence, Math.round(expected * 1e6) / 1e6, `${raw} -> ${r.cat.confidence}`);
    } finally {
      addon.releasePipeline(plain);
    }
  });

  test('views map their boxes back to the same original pixels', async () => {
    const views = ['plain', 'flip', 'half', 'half_flip'] as const;
    const single = Object.fromEntries(
      await Promise.all(views.map(async (v) => [v, await addon.createPipeline(spec(detectorBytes, [v]))] as const)),
    ) as Record<(typeof views)[number], NativePipeline>;
    try {
      // Exact: the flip view of an image is the plain view of the mirrored image, mirrored back.
      for (const file of ['000_skimage_chelsea.png', '052_score_both.png']) {
        const { bytes, entry } = photo(file);
        const flip = ok(await analyzeOne({ data: bytes, encoding: 'bytes' }, single.flip)).cat;
        const mirrored = ok(await analyzeOne({ data: mirroredPng(bytes), encoding: 'bytes' }, single.plain)).cat;
        assert.ok(flip && mirrored, file);
        const back = [entry.width - mirrored.box[2], mirrored.box[1], entry.width - mirrored.box[0], mirrored.box[3]];
        back.forEach((v, k) => assert.ok(Math.abs(v - flip.box[k]!) <= 1, `${file}: flip ${flip.box} vs mirrored plain ${back}`));
        assert.ok(Math.abs(flip.rawScore - mirrored.rawScore) < 1e-3, file);
      }
      // Every view alone finds the same cat at the same place as the plain view (the model's own
      // wobble between scales stays within 4% of the image). 039 is off-centre, so a mirrored box
      // (x 171..286 instead of 214..329) would fail; its manifest box is known to be ~100 px off.
      for (const file of ['039_oxford_Maine_Coon_150.jpg', '019_oxford_Bengal_109.jpg', '024_oxford_Bombay_153.jpg']) {
        const { bytes, entry } = photo(file);
        const tolerance = 0.04 * Math.max(entry.width, entry.height);
        const boxes = await Promise.all(
          views.map(async (v) => {
            const r = ok(await analyzeOne({ data: bytes, encoding: 'bytes' }, single[v]));
            assert.ok(r.cat, `${file} ${v}: a cat`);
            return r.cat.box;
          }),
        );
        const plain = boxes[0]!;
        const mirror = [entry.width - plain[2], plain[1], entry.width - plain[0], plain[3]];
        boxes.forEach((box, i) => {
          const worst = Math.max(...box.map((v, k) => Math.abs(v - plain[k]!)));
          assert.ok(worst <= tolerance, `${file} ${views[i]}: ${box} vs plain ${plain}`);
        });
        if (file.startsWith('039')) {
          assert.ok(Math.max(...mirror.map((v, k) => Math.abs(v - plain[k]!))) > tolerance, 'the check sees a mirrored box');
        }
      }
    } finally {
      for (const p of Object.values(single)) addon.releasePipeline(p);
    }
  });

  test('lenient base64 (v1) failures carry what v1 words as CPython does', async () => {
    // Taken from CPython 3.11.7: base64.b64decode(s) -> the binascii.Error / ValueError text.
    const cases: Array<[string | Buffer, string]> = [
      ['a', 'Invalid base64-encoded string: number of data characters (1) cannot be 1 more than a multiple of 4'],
      ['a===', 'Invalid base64-encoded string: number of data characters (1) cannot be 1 more than a multiple of 4'],
      ['abcde', 'Invalid base64-encoded string: number of data characters (5) cannot be 1 more than a multiple of 4'],
      ['abcde====', 'Invalid base64-encoded string: number of data characters (5) cannot be 1 more than a multiple of 4'],
      ['a b c d e', 'Invalid base64-encoded string: number of data characters (5) cannot be 1 more than a multiple of 4'],
      ['YWJjZ\n', 'Invalid base64-encoded string: number of data characters (5) cannot be 1 more than a multiple of 4'],
      ['abcdefghi', 'Invalid base64-encoded string: number of data characters (9) cannot be 1 more than a multiple of 4'],
      [Buffer.from([0x61, 0xe9]), 'Invalid base64-encoded string: number of data characters (1) cannot be 1 more than a multiple of 4'],
      ['aGVsbG8', 'Incorrect padding'],
      ['ab=c', 'Incorrect padding'],
      ['YWJjZA=', 'Incorrect padding'],
      ['AB', 'Incorrect padding'],
      ['YWJ-', 'Incorrect padding'],
      ['abc', 'Incorrect padding'],
      ['abcdefg', 'Incorrect padding'],
      ['YWJj\u00e9', 'string argument should contain only ASCII characters'],
      ['\u00e9', 'string argument should contain only ASCII characters'],
    ];
    const results = await addon.analyze(
      pipeline,
      cases.map(([data]) => ({ data, encoding: 'base64-lenient' })),
    );
    cases.forEach(([data, message], i) => {
      const f = failure(results[i], 'invalid_base64');
      const base64 = f.reason ? { reason: f.reason, ...(f.dataCharacters !== undefined ? { dataCharacters: f.dataCharacters } : {}) } : undefined;
      assert.equal(v1Base64Message(base64, 'no reason'), message, String(data));
    });
    // Python decodes these to b'' (no error): empty_image; and these to bytes: undecodable.
    const rest = await addon.analyze(pipeline, ['*', '====', 'a=b=c=d', 'ab==c', 'abc=d'].map((data) => ({ data, encoding: 'base64-lenient' as const })));
    failure(rest[0], 'empty_image');
    failure(rest[1], 'empty_image');
    for (const r of rest.slice(2)) failure(r, 'undecodable');
    // Strict mode: the code alone (v2 words it).
    assert.equal(failure(await analyzeOne({ data: 'a', encoding: 'base64-strict' }), 'invalid_base64').reason, undefined);
  });

  test('runSession: one Run at a batch size (the warm-up); the service binding has no bench entry points', async () => {
    assert.equal((addon as unknown as Record<string, unknown>).benchDecode, undefined, 'benchDecode lives in catcomfort_bench.node only');
    const ms = await addon.runSession(pipeline, 'detector', 1);
    assert.ok(Number.isFinite(ms) && ms > 0);
    assert.ok((await addon.runSession(pipeline, 'classifier', 1)) > 0);
    const isNative = (pattern: RegExp) => (e: unknown) =>
      e instanceof Error && (e as Error & { code?: string }).code === 'native_error' && pattern.test(e.message);
    await assert.rejects(addon.runSession(pipeline, 'detector', 2), isNative(/fixed batch of 1/));
    await assert.rejects(addon.runSession(pipeline, 'other' as 'detector', 1), isNative(/stage/));
    await assert.rejects(addon.runSession(pipeline, 'classifier', 0), isNative(/batch/));
    const released = await addon.createPipeline(spec(detectorBytes, ['plain']));
    addon.releasePipeline(released);
    await assert.rejects(addon.runSession(released, 'detector', 1), isNative(/released/));
  });

  test('image-sized blocks: the next analysis reuses them with the same answer; trims unmap those no analysis needed', async () => {
    const item: AnalyzeItem = { data: chelsea.bytes.toString('base64'), encoding: 'base64-strict' };
    const first = await analyzeOne(item);
    const before = addon.imageBlocks();
    const second = await analyzeOne(item);
    const after = addon.imageBlocks();
    // The base64-decoded file, the decoded photo and its resized views.
    assert.ok(after.reused - before.reused >= 3, JSON.stringify({ before, after }));
    assert.ok(after.idleBytes > 0);
    assert.deepEqual({ ...second, timings: null }, { ...first, timings: null });
    // Blocks given back since the last trim are kept through it; the next trim finds them unused.
    await addon.trimFreePages();
    await addon.trimFreePages();
    assert.deepEqual({ idle: addon.imageBlocks().idleBytes, mapped: addon.imageBlocks().mappedBytes }, { idle: 0, mapped: 0 });
  });

  test('image-sized blocks a burst needed are unmapped once 256 takes went by without them', async () => {
    const item: AnalyzeItem = { data: chelsea.bytes.toString('base64'), encoding: 'base64-strict' };
    // One call of 8 items holds 8 decoded photos and their views at once; one item at a time needs one set.
    assert.equal((await addon.analyze(pipeline, Array.from({ length: 8 }, () => item))).length, 8);
    const afterBurst = addon.imageBlocks();
    while (addon.imageBlocks().taken - afterBurst.taken < 2 * 256) await analyzeOne(item);
    const settled = addon.imageBlocks();
    assert.ok(settled.idleBytes < afterBurst.idleBytes / 2, JSON.stringify({ afterBurst, settled }));
  });

  test('many concurrent calls all resolve', async () => {
    const calls = Array.from({ length: 6 }, (_, i) =>
      addon.analyze(pipeline, [{ data: i % 2 === 0 ? chelseaJpeg : coffee.bytes, encoding: 'bytes' }]),
    );
    const results = await Promise.all(calls);
    results.forEach((r, i) => assert.equal(ok(r[0]).width, i % 2 === 0 ? 451 : 600));
  });

  test('whole-call failures are native_error rejections', async () => {
    const isNative = (e: unknown): boolean => e instanceof Error && (e as Error & { code?: string }).code === 'native_error';
    const released = await addon.createPipeline(spec(detectorBytes, ['plain']));
    addon.releasePipeline(released);
    addon.releasePipeline(released); // idempotent
    await assert.rejects(addon.analyze(released, [{ data: chelseaJpeg, encoding: 'bytes' }]), isNative);
    const bogus = {} as NativePipeline;
    await assert.rejects(addon.analyze(bogus, []), isNative);
    assert.throws(() => addon.releasePipeline(bogus), isNative);
    await assert.rejects(addon.createPipeline({ ...spec(detectorBytes, ['plain']), detector: { ...spec(Buffer.from('not onnx'), ['plain']).detector } }), isNative);
    // A classifier whose input does not match its preprocess spec.
    await assert.rejects(
      addon.createPipeline({ ...spec(detectorBytes, ['plain']), classifier: { ...spec(detectorBytes, ['plain']).classifier, model: detectorBytes } }),
      (e: unknown) => isNative(e) && /classifier/.test((e as Error).message),
    );
  });
});
