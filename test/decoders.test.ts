// The detector output decoders behind one dispatch point (native/decoder.h): the manifest's
// output.format picks 'yolox' or 'ssd'.
// - SSD: the native anchors and decoded boxes equal the TypeScript reference
//   (src/graphs/ssd-anchors.ts) on synthetic outputs and on the real model's outputs;
// - YOLOX: the native decoder equals a direct TypeScript decoding of the real model's output;
// - dispatch: unknown formats and invalid settings are refused with the key named; pipelines
//   built from the shipped manifests of both formats find the cat in source pixels;
// - views with the SSD's stretched input: the plain view's box is the decoded canvas box scaled
//   by width / 300 and height / 300; the flip view equals the mirrored image's plain view;
//   viewCombine 'min' scores an item by its least sure view.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadPack, type LoadedPack } from '../src/packs/pack';
import type { SsdOutputManifest, YoloxOutputManifest } from '../src/native/detector-output';
import { decodeSsdBox, ssdAnchors } from '../src/graphs/ssd-anchors';
import { loadAddon, type DecodedDetection, type FloatTensor, type ItemSuccess, type NativeAddon, type NativePipeline, type PipelineSpec } from '../src/native/addon';
import { photo, repoRoot } from './helpers/paths';
import { encodeRgbPng } from './helpers/png';
import { iou } from '../src/tools/iou';

const SSD_PACK = 'bc-v1';
const YOLOX_PACK = 'bc-legacy';
const limits = { maxPixels: 40_000_000, batching: { maxBatchSize: 1, maxQueueDelayUs: 0, maxQueue: 1, maxInFlight: 1 }, sessionBatch: 1 };
const CHELSEA = '000_skimage_chelsea.png';
const PHOTOS = [CHELSEA, '019_oxford_Bengal_109.jpg', '041_ggoni_cats_couch.jpg', '088_oxford_pomeranian_124.jpg', '111_skimage_coffee.png'];

let addon: NativeAddon;
let ssd: LoadedPack;
let yolox: LoadedPack;

before(async () => {
  addon = loadAddon();
  addon.configure({ providers: ['cpu'], deviceId: 0, trtCacheDir: os.tmpdir(), trtFp16: false, poolThreads: 2, intraOpThreads: 1 });
  ssd = await loadPack(path.join(repoRoot, 'models', SSD_PACK), limits);
  yolox = await loadPack(path.join(repoRoot, 'models', YOLOX_PACK), limits);
});

const ssdOutput = () => ssd.spec.detector.output as SsdOutputManifest;

/** The SSD's two outputs for one photo, from the service's own preprocessing. */
async function ssdOutputs(file: string): Promise<{ outputs: FloatTensor[]; width: number; height: number }> {
  const pre = await addon.preprocessImage(readFileSync(photo(file)), ssd.spec.detector.preprocess);
  const outputs = await addon.runModel(ssd.spec.detector.model, [{ ...pre.tensor, name: 'normalized_input_image_tensor' }]);
  return { outputs, width: pre.width, height: pre.height };
}

function assertBoxesClose(actual: DecodedDetection[], expected: DecodedDetection[], tolerance: number, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: number of candidates`);
  actual.forEach((a, i) => {
    const e = expected[i]!;
    a.box.forEach((v, k) => assert.ok(Math.abs(v - e.box[k]!) <= tolerance, `${what} #${i}: box ${a.box} vs ${e.box}`));
    assert.ok(Math.abs(a.score - e.score) <= 1e-6, `${what} #${i}: score ${a.score} vs ${e.score}`);
  });
}

describe('SSD decoder: the native port equals src/graphs/ssd-anchors.ts', () => {
  test('anchors: zero box encodings decode to the anchors themselves, all 1917 in order', async () => {
    const out = ssdOutput();
    const anchors = ssdAnchors(out.anchors);
    assert.equal(anchors.length, 1917);
    const boxes: FloatTensor = { name: 'boxes', dims: [1, anchors.length, 4], data: new Float32Array(anchors.length * 4) };
    const logits: FloatTensor = { name: 'logits', dims: [1, anchors.length, out.numClasses], data: new Float32Array(anchors.length * out.numClasses).fill(-30) };
    for (let a = 0; a < anchors.length; a++) logits.data[a * out.numClasses + out.catClassIndex] = 30;
    const decoded = await addon.decodeDetections({ ...ssd.spec.detector, scoreFloor: 0.5 }, [boxes, logits]);
    const { width: W, height: H } = ssd.spec.detector.preprocess;
    const expected = anchors.map((a) => ({
      box: [(a.xCenter - a.width / 2) * W, (a.yCenter - a.height / 2) * H, (a.xCenter + a.width / 2) * W, (a.yCenter + a.height / 2) * H] as [number, number, number, number],
      score: 1 / (1 + Math.exp(-30)),
    }));
    // float32 pixels of a 300-pixel canvas: a few 1e-5
    assertBoxesClose(decoded, expected, 1e-3, 'anchors');
  });

  test('real model outputs: every candidate above the floor, boxes and sigmoid scores, on five photos', async () => {
    const out = ssdOutput();
    const anchors = ssdAnchors(out.anchors);
    const { width: W, height: H } = ssd.spec.detector.preprocess;
    let compared = 0;
    for (const file of PHOTOS) {
      const { outputs } = await ssdOutputs(file);
      const [boxes, logits] = outputs;
      assert.deepEqual(boxes!.dims, [1, 1917, 4]);
      const floor = 0.02;
      const decoded = await addon.decodeDetections({ ...ssd.spec.detector, scoreFloor: floor }, outputs);
      const expected: DecodedDetection[] = [];
      anchors.forEach((anchor, a) => {
        const score = 1 / (1 + Math.exp(-logits!.data[a * out.numClasses + out.catClassIndex]!));
        if (score < floor) return;
        const b = decodeSsdBox(boxes!.data.subarray(a * 4, a * 4 + 4), anchor, out.boxCoderScales);
        expected.push({ box: [b.xMin * W, b.yMin * H, b.xMax * W, b.yMax * H], score });
      });
      assert.ok(expected.length > 0, `${file}: some candidates`);
      assertBoxesClose(decoded, expected, 1e-3, file);
      compared += expected.length;
    }
    assert.ok(compared > 50, `${compared} candidates compared`);
  });

  test('a decoder refuses outputs of the wrong shape', async () => {
    const out = ssdOutput();
    const boxes: FloatTensor = { name: 'b', dims: [1, 1916, 4], data: new Float32Array(1916 * 4) };
    const logits: FloatTensor = { name: 'l', dims: [1, 1916, out.numClasses], data: new Float32Array(1916 * out.numClasses) };
    await assert.rejects(addon.decodeDetections(ssd.spec.detector, [boxes, logits]), /do not match the SSD spec .*\[1917, 4\]/);
    await assert.rejects(addon.decodeDetections(ssd.spec.detector, [boxes]), /reads 2 outputs/);
  });
});

describe('YOLOX decoder through the same dispatch', () => {
  test('real model output: the native candidates equal a direct decoding', async () => {
    const output = yolox.spec.detector.output as YoloxOutputManifest;
    const pre = await addon.preprocessImage(readFileSync(photo(CHELSEA)), yolox.spec.detector.preprocess);
    const [rows] = await addon.runModel(yolox.spec.detector.model, [{ ...pre.tensor, name: 'images' }]);
    const rowLength = 5 + output.numClasses;
    assert.deepEqual(rows!.dims, [1, 3549, rowLength]);
    const decoded = await addon.decodeDetections(yolox.spec.detector, [rows!]);
    const expected: DecodedDetection[] = [];
    let r = 0;
    for (const stride of output.strides) {
      const grid = 416 / stride;
      for (let gy = 0; gy < grid; gy++) {
        for (let gx = 0; gx < grid; gx++, r++) {
          const v = rows!.data.subarray(r * rowLength, (r + 1) * rowLength);
          const score = Math.fround(v[4]! * v[5 + output.catClassIndex]!);
          if (score < yolox.spec.detector.scoreFloor) continue;
          const cx = (v[0]! + gx) * stride;
          const cy = (v[1]! + gy) * stride;
          const w = Math.exp(v[2]!) * stride;
          const h = Math.exp(v[3]!) * stride;
          expected.push({ box: [cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], score });
        }
      }
    }
    assert.ok(expected.length > 0);
    assertBoxesClose(decoded, expected, 1e-2, 'yolox');
  });
});

describe('dispatch: output.format picks the decoder; settings are checked once', () => {
  const spec = () => ({ preprocess: ssd.spec.detector.preprocess, scoreFloor: 0.05 });
  const empty: FloatTensor[] = [];

  test('unknown formats and invalid settings are refused, naming the key', async () => {
    const out = ssdOutput();
    const cases: Array<[unknown, RegExp]> = [
      [{ format: 'detr' }, /format "detr" has no decoder \(known: yolox, ssd\)/],
      [{ ...out, catClassIndex: 24 }, /catClassIndex must be below numClasses/],
      [{ ...out, scoreActivation: 'softmax' }, /scoreActivation must be "sigmoid"/],
      [{ ...out, boxCoderScales: [10, 10, 5] }, /boxCoderScales must have 4 numbers/],
      [{ ...out, anchors: { ...out.anchors, minScale: undefined } }, /output\.anchors\.minScale is missing/],
      [{ ...out, anchors: { ...out.anchors, featureMapSizes: [19, 10.5] } }, /anchors\.featureMapSizes must hold integers/],
      [{ format: 'yolox', strides: [], numClasses: 80, catClassIndex: 15 }, /strides must not be empty/],
      [{ format: 'yolox', strides: [8, 16, 32], numClasses: 80 }, /output\.catClassIndex is missing/],
    ];
    for (const [output, pattern] of cases) {
      await assert.rejects(addon.decodeDetections({ ...spec(), output: output as SsdOutputManifest }, empty), pattern, JSON.stringify(output));
    }
    // createPipeline takes the same path: a bad output block rejects before any session exists.
    await assert.rejects(
      addon.createPipeline({ ...ssd.spec, detector: { ...ssd.spec.detector, output: { format: 'detr' } as unknown as SsdOutputManifest } }),
      /has no decoder/,
    );
    // A YOLOX output block on the SSD model: the model's declared outputs do not fit.
    await assert.rejects(
      addon.createPipeline({ ...ssd.spec, detector: { ...ssd.spec.detector, output: yolox.spec.detector.output } }),
      /does not match the YOLOX spec/,
    );
  });

  test('pipelines from the shipped manifests of both formats find chelsea in source pixels', async () => {
    const label = [0, 0, 400, 300]; // the cat spans x 0-400 (the manifest's box is mirrored, see the model card)
    for (const pack of [ssd, yolox]) {
      const pipeline = await addon.createPipeline(pack.spec);
      try {
        const [r] = await addon.analyze(pipeline, [{ data: readFileSync(photo(CHELSEA)), encoding: 'bytes' }]);
        assert.ok(r && r.ok && r.cat, `${pack.manifest.id}: a cat`);
        const overlap = iou(r.cat.box, label);
        assert.ok(overlap > 0.7, `${pack.manifest.id} (${pack.spec.detector.output.format}): box ${r.cat.box}, IoU ${overlap}`);
        assert.ok(r.cat.confidence >= pack.manifest.cutoffs.detected, `${pack.manifest.id}: confidence ${r.cat.confidence}`);
      } finally {
        addon.releasePipeline(pipeline);
      }
    }
  });
});

describe('SSD views: stretch mapping, flip, viewCombine', () => {
  const pipelines: NativePipeline[] = [];
  const make = async (views: PipelineSpec['detector']['views'], viewCombine: 'max' | 'min' = 'max') => {
    const p = await addon.createPipeline({ ...ssd.spec, detector: { ...ssd.spec.detector, views, viewCombine, calibration: [] } });
    pipelines.push(p);
    return p;
  };
  const analyze = async (p: NativePipeline, data: Buffer): Promise<ItemSuccess> => {
    const [r] = await addon.analyze(p, [{ data, encoding: 'bytes' }]);
    assert.ok(r && r.ok);
    return r;
  };
  after(() => pipelines.forEach((p) => addon.releasePipeline(p)));

  test('plain view: the top candidate after NMS, canvas x scaled by width / 300 and y by height / 300', async () => {
    const plain = await make(['plain']);
    for (const file of PHOTOS.slice(0, 3)) {
      const { outputs, width, height } = await ssdOutputs(file);
      const candidates = await addon.decodeDetections(ssd.spec.detector, outputs);
      const top = candidates.reduce((a, b) => (b.score > a.score ? b : a));
      const r = await analyze(plain, readFileSync(photo(file)));
      assert.ok(r.cat);
      assert.ok(Math.abs(r.cat.rawScore - top.score) < 1e-6, `${file}: ${r.cat.rawScore} vs ${top.score}`);
      const expected = [top.box[0] * (width / 300), top.box[1] * (height / 300), top.box[2] * (width / 300), top.box[3] * (height / 300)].map(
        (v, k) => Math.round(Math.min(Math.max(v, 0), k % 2 === 0 ? width : height)),
      );
      assert.deepEqual(r.cat.box, expected, `${file}: ${width}x${height}`);
    }
  });

  test('flip view = plain view of the mirrored image, mirrored back; min combines the two views', async () => {
    const [plain, flip, max, min] = await Promise.all([make(['plain']), make(['flip']), make(['plain', 'flip']), make(['plain', 'flip'], 'min')]);
    // A mirrored copy: decode (the addon's own decoder, stretched to its own size = identity) and write a PNG.
    const file = '019_oxford_Bengal_109.jpg';
    const bytes = readFileSync(photo(file));
    const { width, height } = await addon.preprocessImage(bytes, ssd.spec.detector.preprocess);
    const full = await addon.preprocessImage(bytes, { width, height, resize: 'stretch', anchor: 'center', padValue: 0, channelOrder: 'rgb', layout: 'nhwc', scale: 1, mean: [0, 0, 0], std: [1, 1, 1] });
    const mirrored = Buffer.alloc(width * height * 3);
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        for (let c = 0; c < 3; c++) mirrored[(y * width + width - 1 - x) * 3 + c] = Math.round(full.tensor.data[(y * width + x) * 3 + c]!);
      }
    }
    const mirroredPng = encodeRgbPng(width, height, mirrored);
    const [p, f, m, x, n] = await Promise.all([
      analyze(plain, bytes),
      analyze(flip, bytes),
      analyze(plain, mirroredPng),
      analyze(max, bytes),
      analyze(min, bytes),
    ]);
    assert.ok(p.cat && f.cat && m.cat && x.cat && n.cat);
    const back = [width - m.cat.box[2], m.cat.box[1], width - m.cat.box[0], m.cat.box[3]];
    back.forEach((v, k) => assert.ok(Math.abs(v - f.cat!.box[k]!) <= 1, `flip ${f.cat!.box} vs mirrored plain ${back}`));
    assert.ok(Math.abs(f.cat.rawScore - m.cat.rawScore) < 1e-3);
    // max: the best view's score and box; min: the least sure view's score, the best view's box.
    const best = p.cat.rawScore >= f.cat.rawScore ? p.cat : f.cat;
    assert.equal(x.cat.rawScore, Math.max(p.cat.rawScore, f.cat.rawScore));
    assert.deepEqual(x.cat.box, best.box);
    assert.equal(n.cat.rawScore, Math.min(p.cat.rawScore, f.cat.rawScore));
    assert.deepEqual(n.cat.box, best.box);
  });
});
