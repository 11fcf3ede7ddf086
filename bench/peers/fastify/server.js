'use strict';
// Benchmark peer: the v2 POST /v2/predict contract in Fastify + sharp + onnxruntime-node.
//
// Written the way a Node team would: sharp for decoding and resizing (.rotate() for EXIF,
// alpha flattened onto white, raw RGB out), onnxruntime-node InferenceSessions created once per
// process, every model parameter read from the pack's manifest.json (preprocessing, the views
// and how they combine, YOLOX or SSD output decoding, calibration, cutoffs).
//
// Processes: node:cluster with one worker per core (PEER_WORKERS, default the core count).
// onnxruntime-node's session.run() executes synchronously on the JS thread (its promise only
// defers the call with setImmediate), and the JSON parse of a large body, the tensor fill and
// the box decoding are JS too: one process would use one core for all of that, so a Node team
// on a 2-core box runs a cluster of 2, each with 1 ONNX Runtime intra-op thread
// (PEER_INTRA_OP_THREADS) - the same shape as uvicorn --workers 2.
//
// Environment: PEER_HOST, PEER_PORT, PEER_API_KEYS (comma-separated, required), PEER_MODEL_DIR
// (default <repo>/models/bc-v1), PEER_SERVICE_VERSION, PEER_WORKERS, PEER_INTRA_OP_THREADS,
// PEER_MAX_PIXELS, PEER_MAX_BODY_BYTES, PEER_PRECISION (int8: the detector file named by the
// manifest's detector.int8.file, the pack's QDQ model; fp32: detector.file; default int8 when the
// manifest has it, as the service on CPU), PEER_CROP_NETWORK (required when the manifest's
// classifier is an ImageNet backbone + head, classifier.backbone: the service's crop network ONNX
// at PEER_PRECISION, which bench/run.ts writes with src/packs/pack.ts cropNetwork; outputs
// p_discomfort [N,1], probs [N,1000], features [N,1280]), PEER_FREE_NETWORKS=1 (benchmarks of the
// serving layer: models/warmup-cat.png is analysed once at start, and from then on every request
// answers its result, its base64, decoding and networks skipped; the threshold still decides the label).

const cluster = require('node:cluster');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const WORKERS = Number(process.env.PEER_WORKERS || os.availableParallelism());

if (cluster.isPrimary && WORKERS > 1) {
  for (let i = 0; i < WORKERS; i++) cluster.fork();
  let stopping = false;
  cluster.on('exit', (worker, code, signal) => {
    if (!stopping) {
      console.error(`worker ${worker.process.pid} died (${signal || code}); stopping`);
      stopping = true;
      for (const w of Object.values(cluster.workers)) w.kill();
      process.exitCode = 1;
    }
  });
  for (const sig of ['SIGTERM', 'SIGINT']) {
    process.on(sig, () => {
      stopping = true;
      for (const w of Object.values(cluster.workers)) w.kill();
    });
  }
  let ready = 0;
  cluster.on('message', (_worker, msg) => {
    if (msg && msg.listening && ++ready === WORKERS) console.log(`listening on ${msg.address} (${WORKERS} workers)`);
  });
} else {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}

async function main() {
  const Fastify = require('fastify');
  const sharp = require('sharp');
  const ort = require('onnxruntime-node');

  const repo = path.resolve(__dirname, '../../..');
  const modelDir = process.env.PEER_MODEL_DIR || path.join(repo, 'models/bc-v1');
  const manifest = JSON.parse(fs.readFileSync(path.join(modelDir, 'manifest.json'), 'utf8'));
  const keys = (process.env.PEER_API_KEYS || '').split(',').map((k) => k.trim()).filter(Boolean).map((k) => Buffer.from(k));
  if (keys.length === 0) throw new Error('PEER_API_KEYS must name at least one key');
  const serviceVersion = process.env.PEER_SERVICE_VERSION || '1.0.0';
  const maxPixels = Number(process.env.PEER_MAX_PIXELS || 40_000_000);
  const intraOp = Number(process.env.PEER_INTRA_OP_THREADS || 1);
  const det = manifest.detector;
  const cls = manifest.classifier;
  const precision = (process.env.PEER_PRECISION || '').trim().toLowerCase() || (det.int8 ? 'int8' : 'fp32');
  if (precision !== 'int8' && precision !== 'fp32') throw new Error(`PEER_PRECISION must be int8 or fp32, not "${process.env.PEER_PRECISION}"`);
  if (precision === 'int8' && !det.int8) throw new Error(`PEER_PRECISION=int8, but ${path.join(modelDir, 'manifest.json')} has no detector.int8`);
  const detectorFile = precision === 'int8' ? det.int8.file : det.file;
  // A classifier is either one network file (outputIndex of its first output is the score), or an
  // ImageNet backbone + head that the service composes into one crop network at load; that network
  // comes ready-made in PEER_CROP_NETWORK, and the manifest's verifier reads its class probabilities.
  const headClassifier = 'backbone' in cls;
  const verifier = headClassifier ? manifest.verifier || null : null;
  let classifierFile = path.join(modelDir, cls.file || '');
  if (headClassifier) {
    const crop = (process.env.PEER_CROP_NETWORK || '').trim();
    if (!crop) {
      throw new Error(
        `${path.join(modelDir, 'manifest.json')} has classifier.backbone: set PEER_CROP_NETWORK to the crop network ONNX ` +
          'the service composes from it (bench/run.ts writes it with src/packs/pack.ts cropNetwork)',
      );
    }
    if (!fs.statSync(crop, { throwIfNoEntry: false })?.isFile()) throw new Error(`PEER_CROP_NETWORK=${crop} is not a file`);
    classifierFile = crop;
  }
  /** The ImageNet classes of named groups, each entry a class or an inclusive [first, last] range. */
  const classList = (groups) =>
    Object.values(groups)
      .flat()
      .flatMap((e) => (typeof e === 'number' ? [e] : Array.from({ length: e[1] - e[0] + 1 }, (_, k) => e[0] + k)));
  // Up to maxCandidates `detected` candidates per image go through the verifier; 1 without one.
  const keep = verifier ? verifier.maxCandidates : 1;
  const rule = verifier && {
    lookalike: classList(verifier.rule.lookalikeClasses),
    cat: classList(verifier.rule.catClasses),
    dog: classList(verifier.rule.dogClasses),
    maxLookalikeMass: verifier.rule.maxLookalikeMass,
  };

  sharp.cache(false); // every request is a new image

  const sessionOptions = { executionProviders: ['cpu'], intraOpNumThreads: intraOp, interOpNumThreads: 1, graphOptimizationLevel: 'all' };
  const detector = await ort.InferenceSession.create(path.join(modelDir, detectorFile), sessionOptions);
  const classifier = await ort.InferenceSession.create(classifierFile, sessionOptions);
  if (headClassifier && (!classifier.outputNames.includes('p_discomfort') || (verifier && !classifier.outputNames.includes('probs')))) {
    throw new Error(`PEER_CROP_NETWORK=${classifierFile} has outputs ${classifier.outputNames.join(', ')}, expected p_discomfort and probs`);
  }
  const classifierOutputs = headClassifier ? (verifier ? ['p_discomfort', 'probs'] : ['p_discomfort']) : [classifier.outputNames[0]];

  // Detector output decoding, picked by the manifest's output.format as in the service
  // (native/decoder.cc): cat candidates of one image in canvas pixels.
  const out = det.output;
  function yoloxDecoder() {
    const grid = []; // one row per cell, strides in order
    for (const s of out.strides) {
      const gh = Math.floor(det.preprocess.height / s);
      const gw = Math.floor(det.preprocess.width / s);
      for (let gy = 0; gy < gh; gy++) for (let gx = 0; gx < gw; gx++) grid.push([gx, gy, s]);
    }
    const rowLength = 5 + out.numClasses;
    return {
      outputs: 1,
      decode([rows]) {
        const cands = [];
        for (let r = 0; r < grid.length; r++) {
          const o = r * rowLength;
          const score = rows[o + 4] * rows[o + 5 + out.catClassIndex];
          if (!(score >= det.scoreFloor)) continue;
          const [gx, gy, st] = grid[r];
          const cx = (rows[o] + gx) * st;
          const cy = (rows[o + 1] + gy) * st;
          const bw = Math.exp(rows[o + 2]) * st;
          const bh = Math.exp(rows[o + 3]) * st;
          cands.push({ box: [cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2], score });
        }
        return cands;
      },
    };
  }
  function ssdDecoder() {
    // Grid anchors of the TF Object Detection API (as src/graphs/ssd-anchors.ts): [yc, xc, h, w].
    const a = out.anchors;
    const n = a.featureMapSizes.length;
    const scale = (i) => (i >= n ? 1 : n === 1 ? a.minScale : a.minScale + ((a.maxScale - a.minScale) * i) / (n - 1));
    const anchors = [];
    a.featureMapSizes.forEach((m, layer) => {
      const s = scale(layer);
      const specs = layer === 0 && a.reduceBoxesInLowestLayer ? [[0.1, 1], [s, 2], [s, 0.5]] : a.aspectRatios.map((r) => [s, r]);
      if (!(layer === 0 && a.reduceBoxesInLowestLayer) && a.interpolatedScaleAspectRatio > 0) {
        specs.push([Math.sqrt(s * scale(layer + 1)), a.interpolatedScaleAspectRatio]);
      }
      for (let y = 0; y < m; y++)
        for (let x = 0; x < m; x++)
          for (const [boxScale, ratio] of specs) anchors.push([(y + 0.5) / m, (x + 0.5) / m, boxScale / Math.sqrt(ratio), boxScale * Math.sqrt(ratio)]);
    });
    const [sy, sx, sh, sw] = out.boxCoderScales;
    const W = det.preprocess.width;
    const H = det.preprocess.height;
    return {
      outputs: 2,
      decode([enc, logits]) {
        const cands = [];
        for (let i = 0; i < anchors.length; i++) {
          const score = 1 / (1 + Math.exp(-logits[i * out.numClasses + out.catClassIndex]));
          if (!(score >= det.scoreFloor)) continue;
          const [ya, xa, ha, wa] = anchors[i];
          const yc = (enc[i * 4] / sy) * ha + ya;
          const xc = (enc[i * 4 + 1] / sx) * wa + xa;
          const h = Math.exp(enc[i * 4 + 2] / sh) * ha;
          const w = Math.exp(enc[i * 4 + 3] / sw) * wa;
          cands.push({ box: [(xc - w / 2) * W, (yc - h / 2) * H, (xc + w / 2) * W, (yc + h / 2) * H], score });
        }
        return cands;
      },
    };
  }
  const decoders = { yolox: yoloxDecoder, ssd: ssdDecoder };
  if (!decoders[out.format]) throw new Error(`detector output format "${out.format}" has no decoder here`);
  const decoder = decoders[out.format]();
  const detectorOutputs = detector.outputNames.slice(0, decoder.outputs);

  class ImageError extends Error {}

  /** RGB bytes (width x height, placed at ox, oy, optionally mirrored) -> normalised tensor data. */
  function fillTensor(pp, rgb, width, height, ox, oy, flip) {
    const out = new Float32Array(pp.width * pp.height * 3);
    fillImage(out, pp, rgb, width, height, ox, oy, flip);
    return new ort.Tensor('float32', out, pp.layout === 'nchw' ? [1, 3, pp.height, pp.width] : [1, pp.height, pp.width, 3]);
  }

  /** Several crops of the full input size -> one batch tensor [N, ...]. */
  function fillBatch(pp, rgbs) {
    const size = pp.width * pp.height * 3;
    const out = new Float32Array(size * rgbs.length);
    rgbs.forEach((rgb, k) => fillImage(out.subarray(k * size, (k + 1) * size), pp, rgb, pp.width, pp.height, 0, 0, false));
    return new ort.Tensor('float32', out, pp.layout === 'nchw' ? [rgbs.length, 3, pp.height, pp.width] : [rgbs.length, pp.height, pp.width, 3]);
  }

  /** One image into `out` (its size): the normalised pixels, the pad value around them. */
  function fillImage(out, pp, rgb, width, height, ox, oy, flip) {
    const W = pp.width;
    const H = pp.height;
    const plane = W * H;
    const src = pp.channelOrder === 'bgr' ? [2, 1, 0] : [0, 1, 2];
    const lut = [0, 1, 2].map((c) => {
      const t = new Float32Array(256);
      for (let v = 0; v < 256; v++) t[v] = (v * pp.scale - pp.mean[c]) / pp.std[c];
      return t;
    });
    const nchw = pp.layout === 'nchw';
    for (let c = 0; c < 3; c++) {
      const pad = (pp.padValue * pp.scale - pp.mean[c]) / pp.std[c];
      if (nchw) out.fill(pad, c * plane, (c + 1) * plane);
      else for (let i = 0; i < plane; i++) out[i * 3 + c] = pad;
    }
    for (let y = 0; y < height; y++) {
      const row = y * width * 3;
      const base = (y + oy) * W + ox;
      for (let x = 0; x < width; x++) {
        const p = row + (flip ? width - 1 - x : x) * 3;
        for (let c = 0; c < 3; c++) {
          const v = lut[c][rgb[p + src[c]]];
          if (nchw) out[c * plane + base + x] = v;
          else out[(base + x) * 3 + c] = v;
        }
      }
    }
  }

  function decodeBase64(image) {
    let data = image;
    const m = /^data:image\/[A-Za-z0-9.+-]+;base64,/.exec(data);
    if (m) {
      data = data.slice(m[0].length);
      if (data.length === 0) throw new ImageError('Image is empty.');
    }
    // Strict: standard alphabet, exact padding (Buffer.from alone skips anything it does not know).
    if (data.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(data)) throw new ImageError('Image is not valid base64.');
    const bytes = Buffer.from(data, 'base64');
    if (bytes.length === 0) throw new ImageError('Image is empty.');
    return bytes;
  }

  const allowedFormats = new Set(['jpeg', 'png', 'webp', 'gif', 'tiff']);

  function iou(a, b) {
    const ix = Math.max(0, Math.min(a[2], b[2]) - Math.max(a[0], b[0]));
    const iy = Math.max(0, Math.min(a[3], b[3]) - Math.max(a[1], b[1]));
    const inter = ix * iy;
    const union = Math.max(0, a[2] - a[0]) * Math.max(0, a[3] - a[1]) + Math.max(0, b[2] - b[0]) * Math.max(0, b[3] - b[1]) - inter;
    return union > 0 ? inter / union : 0;
  }

  function nms(cands, threshold) {
    cands.sort((a, b) => b.score - a.score);
    const kept = [];
    for (const c of cands) if (!kept.some((k) => iou(c.box, k.box) > threshold)) kept.push(c);
    return kept;
  }

  function calibrate(raw) {
    const knots = [...det.calibration].sort((a, b) => a[0] - b[0]);
    let v = raw;
    if (knots.length > 0) {
      if (raw <= knots[0][0]) v = knots[0][1];
      else if (raw >= knots[knots.length - 1][0]) v = knots[knots.length - 1][1];
      else
        for (let i = 1; i < knots.length; i++)
          if (raw <= knots[i][0]) {
            const [x0, y0] = knots[i - 1];
            const [x1, y1] = knots[i];
            v = x1 > x0 ? y0 + ((y1 - y0) * (raw - x0)) / (x1 - x0) : y1;
            break;
          }
    }
    return Math.min(1, Math.max(0, v));
  }

  const round6 = (x) => Math.round(x * 1e6) / 1e6;
  const clamp = (v, lo, hi) => Math.min(hi, Math.max(lo, v));

  async function analyze(bytes) {
    const input = sharp(bytes, { failOn: 'error', limitInputPixels: maxPixels, sequentialRead: true });
    let meta;
    try {
      meta = await input.metadata();
    } catch {
      throw new ImageError('Image could not be decoded.');
    }
    if (!allowedFormats.has(meta.format)) throw new ImageError('Image could not be decoded.');
    if (meta.width * meta.height > maxPixels) throw new ImageError(`Image is too large; at most ${maxPixels} pixels.`);
    if (!['uchar', 'char'].includes(meta.depth)) throw new ImageError('Unsupported pixel format; send an 8-bit image.');
    const swap = (meta.orientation || 1) >= 5;
    const w = swap ? meta.height : meta.width;
    const h = swap ? meta.width : meta.height;
    // EXIF rotation, alpha onto white, 3-channel sRGB; each branch clones the decoder.
    const base = input.rotate().flatten({ background: '#ffffff' }).toColourspace('srgb');
    const rgb = (pipeline) => pipeline.removeAlpha().raw().toBuffer({ resolveWithObject: true });

    // Content size and offset per view (native PlaceOnCanvas): letterbox keeps the aspect ratio,
    // stretch scales x and y independently; half views are centred.
    const pp = det.preprocess;
    let sx0 = pp.width / w;
    let sy0 = pp.height / h;
    if (pp.resize === 'letterbox') sx0 = sy0 = Math.min(sx0, sy0);
    const views = det.views.map((view) => {
      const half = view === 'half' || view === 'half_flip';
      const flip = view === 'flip' || view === 'half_flip';
      const f = half ? 0.5 : 1;
      const pw = clamp(Math.round(w * sx0 * f), 1, pp.width);
      const ph = clamp(Math.round(h * sy0 * f), 1, pp.height);
      const centre = half || pp.anchor === 'center';
      return { flip, pw, ph, ox: centre ? Math.floor((pp.width - pw) / 2) : 0, oy: centre ? Math.floor((pp.height - ph) / 2) : 0 };
    });
    const sizes = [...new Set(views.map((v) => `${v.pw}x${v.ph}`))];
    let resized;
    try {
      resized = await Promise.all(
        sizes.map((key) => {
          const [pw, ph] = key.split('x').map(Number);
          return rgb(base.clone().resize(pw, ph, { fit: 'fill', kernel: 'linear' }));
        }),
      );
    } catch {
      throw new ImageError('Image could not be decoded.');
    }

    // The best view's box and its next NMS candidates (up to `keep` in all); the score combined
    // over the views (viewCombine: max, or min = every view must see the cat).
    let best = null;
    let lowest = Infinity;
    for (const v of views) {
      const { data } = resized[sizes.indexOf(`${v.pw}x${v.ph}`)];
      const tensor = fillTensor(pp, data, v.pw, v.ph, v.ox, v.oy, v.flip);
      const res = await detector.run({ [detector.inputNames[0]]: tensor }, detectorOutputs);
      const kept = nms(decoder.decode(detectorOutputs.map((name) => res[name].data)), det.nmsIou);
      if (kept.length === 0) {
        lowest = -1;
        continue;
      }
      lowest = Math.min(lowest, kept[0].score);
      const sx = v.pw / w;
      const sy = v.ph / h;
      const toX = (u) => (v.flip ? (v.pw - (u - v.ox)) / sx : (u - v.ox) / sx);
      const toSource = (c) => {
        const xa = toX(c.box[0]);
        const xb = toX(c.box[2]);
        return { box: [Math.min(xa, xb), (c.box[1] - v.oy) / sy, Math.max(xa, xb), (c.box[3] - v.oy) / sy], score: c.score };
      };
      if (best === null || kept[0].score > best.score) best = { ...toSource(kept[0]), next: kept.slice(1, keep).map(toSource) };
    }
    if (best !== null && (det.viewCombine || 'max') === 'min') best = lowest >= 0 ? { ...best, score: lowest } : null;

    const result = { width: w, height: h, detection: 'not_detected', cat: null, score: null };
    if (best === null) return result;
    // Source-pixel box (clamped, rounded) and calibrated confidence, as clients see them.
    const candidate = (c) => ({
      box: [clamp(c.box[0], 0, w), clamp(c.box[1], 0, h), clamp(c.box[2], 0, w), clamp(c.box[3], 0, h)].map(Math.round),
      confidence: round6(calibrate(c.score)),
    });
    const top = candidate(best);
    if (top.confidence >= manifest.cutoffs.detected) result.detection = 'detected';
    else if (top.confidence >= manifest.cutoffs.lowConfidence) result.detection = 'low_confidence';
    if (result.detection === 'not_detected') return result;
    result.cat = top;
    if (result.detection !== 'detected') return result;

    // Classifier: each candidate's box plus its margin, from the full-resolution image, stretched;
    // the top candidate and (with a verifier) the best view's next `detected` ones, in one batch.
    const cands = [top, ...best.next.map(candidate).filter((c) => c.confidence >= manifest.cutoffs.detected)];
    const cp = cls.preprocess;
    const m = cls.cropMargin;
    const crops = await Promise.all(
      cands.map(({ box }) => {
        const bw = box[2] - box[0];
        const bh = box[3] - box[1];
        const x1 = clamp(Math.floor(box[0] - bw * m), 0, w - 1);
        const y1 = clamp(Math.floor(box[1] - bh * m), 0, h - 1);
        const x2 = clamp(Math.ceil(box[2] + bw * m), x1 + 1, w);
        const y2 = clamp(Math.ceil(box[3] + bh * m), y1 + 1, h);
        return rgb(
          base.clone().extract({ left: x1, top: y1, width: x2 - x1, height: y2 - y1 }).resize(cp.width, cp.height, { fit: 'fill', kernel: 'linear' }),
        );
      }),
    );
    const out = await classifier.run({ [classifier.inputNames[0]]: fillBatch(cp, crops.map((c) => c.data)) }, classifierOutputs);
    const scores = out[classifierOutputs[0]].data;
    const perScore = scores.length / cands.length;
    const scoreOf = (k) => scores[k * perScore + (headClassifier ? 0 : cls.outputIndex)];
    let chosen = 0;
    if (verifier) {
      // The verifier's rule on each crop's class probabilities: vetoed when the look-alike mass
      // exceeds maxLookalikeMass; of those passed, the first at least as cat-like as dog-like, else
      // the first; none passed: low_confidence with the top candidate.
      const probs = out.probs.data;
      const classes = probs.length / cands.length;
      const mass = (k, list) => round6(list.reduce((sum, c) => sum + probs[k * classes + c], 0));
      const checked = cands.map((_, k) => ({ passed: mass(k, rule.lookalike) <= rule.maxLookalikeMass, catLike: mass(k, rule.cat) >= mass(k, rule.dog) }));
      chosen = checked.findIndex((c) => c.passed && c.catLike);
      if (chosen < 0) chosen = checked.findIndex((c) => c.passed);
      if (chosen < 0) {
        result.detection = 'low_confidence';
        return result;
      }
    }
    result.cat = cands[chosen];
    result.score = round6(clamp(scoreOf(chosen), 0, 1));
    return result;
  }

  // ---- HTTP

  const app = Fastify({ logger: false, bodyLimit: Number(process.env.PEER_MAX_BODY_BYTES || 8 * 1024 * 1024) });
  const requestIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;

  app.addHook('onRequest', async (request, reply) => {
    const given = request.headers['x-request-id'];
    request.rid = typeof given === 'string' && requestIdPattern.test(given) ? given : crypto.randomUUID();
    reply.header('X-Request-ID', request.rid);
  });

  const sendError = (request, reply, status, code, message, details = {}) =>
    reply.code(status).send({ request_id: request.rid, error: { code, message, details } });

  const checkKey = async (request, reply) => {
    const given = Buffer.from(String(request.headers['api-key'] || ''));
    if (!keys.some((k) => k.length === given.length && crypto.timingSafeEqual(k, given))) {
      return sendError(request, reply, 401, 'unauthorized', 'Missing or invalid API key.');
    }
  };

  const schema = {
    body: {
      type: 'object',
      required: ['image'],
      properties: { image: { type: 'string', minLength: 1 }, threshold: { type: ['number', 'null'], minimum: 0, maximum: 1 } },
    },
  };

  app.setErrorHandler((error, request, reply) => {
    if (error.validation) {
      const errors = error.validation.map((e) => ({
        field: e.params && e.params.missingProperty ? e.params.missingProperty : e.instancePath.replace(/^\//, '') || 'body',
        message: e.message,
      }));
      return sendError(request, reply, 422, 'invalid_request', 'Request validation failed.', { errors });
    }
    if (error instanceof ImageError) return sendError(request, reply, 400, 'invalid_image', error.message);
    if (error.statusCode === 413) return sendError(request, reply, 413, 'http_error', 'Request body is too large.');
    if (error.statusCode === 415) return sendError(request, reply, 415, 'http_error', 'Content-Type must be application/json.');
    if (error.statusCode === 400 && error.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
      return sendError(request, reply, 422, 'invalid_request', 'Request validation failed.', { errors: [{ field: 'body', message: 'JSON decode error' }] });
    }
    if (error.statusCode && error.statusCode < 500) return sendError(request, reply, error.statusCode, 'http_error', error.message);
    request.log.error(error);
    return sendError(request, reply, 500, 'internal_error', 'Internal server error.');
  });

  const freeAnswer = process.env.PEER_FREE_NETWORKS === '1' ? await analyze(fs.readFileSync(path.join(repo, 'models/warmup-cat.png'))) : null;

  app.post('/v2/predict', { onRequest: checkKey, schema }, async (request) => {
    const threshold = request.body.threshold ?? manifest.defaultThreshold;
    const a = freeAnswer ?? (await analyze(decodeBase64(request.body.image)));
    return {
      request_id: request.rid,
      model: { id: manifest.id, version: serviceVersion },
      detection: a.detection,
      prediction: a.score === null ? null : { label: a.score > threshold ? 'discomfort' : 'comfort', score: a.score, threshold },
      cat: a.cat
        ? {
            bounding_box: { x_min: a.cat.box[0], y_min: a.cat.box[1], x_max: a.cat.box[2], y_max: a.cat.box[3] },
            detection_confidence: a.cat.confidence,
          }
        : null,
      image: { width: a.width, height: a.height },
    };
  });

  const host = process.env.PEER_HOST || '127.0.0.1';
  const port = Number(process.env.PEER_PORT || 8081);
  const address = await app.listen({ host, port });
  if (process.send) process.send({ listening: true, address });
  else console.log(`listening on ${address}`);
  const stop = () => app.close().then(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
