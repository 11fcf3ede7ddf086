// Embeddings of labelled photos through the service's own pipeline: decode, detect (the base
// pack's detector, views, calibration and cutoff), crop the detected cat (the base pack's margin),
// and the backbone's features: the ImageNet crop network's `features` output (after the base
// pack's verifier, as the service would), or a detector stage in the classifier's place. Photos where no cat
// is `detected` are skipped with the reason. Results are cached on disk, keyed by the photo's
// sha256 and everything above that shapes an embedding, so a re-run with other settings is quick.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describeFailure, loadAddon, type NativeAddon, type NativePipeline } from '../native/addon';
import { loadPack } from '../packs/pack';
import { sha256 } from '../hash';
import { CROP_OUTPUTS } from '../graphs/imagenet/crop-network';
import type { Backbone } from './backbone';
import type { LabelledPhoto } from './dataset';

export type Embedded = { photo: LabelledPhoto; embedding: Float64Array } | { photo: LabelledPhoto; skipped: string };

type CacheEntry = { embedding: string } | { skipped: string };

const CHUNK = 8;

/** Where embeddings are cached unless --cache says: $XDG_CACHE_HOME or ~/.cache, catcomfort/embeddings. */
export function defaultCacheDir(): string {
  return path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'catcomfort', 'embeddings');
}

export interface EmbedOptions {
  baseDir: string;
  backbone: Backbone;
  cacheDir: string;
  progress: (line: string, final: boolean) => void;
}

async function openPipeline(addon: NativeAddon, baseDir: string, backbone: Backbone) {
  // The ImageNet backbone embeds as the CPU service runs it (int8); the detector stages as before.
  const precision = backbone.kind === 'imagenet' ? 'int8' : 'fp32';
  const pack = await loadPack(baseDir, {
    maxPixels: 100_000_000,
    batching: { maxBatchSize: CHUNK, maxQueueDelayUs: 0, maxQueue: CHUNK, maxInFlight: 1 },
    sessionBatch: 1,
    precision,
  });
  const c = pack.manifest.classifier;
  if (backbone.kind === 'imagenet') {
    // The pack's own crop network (with its verifier) returns the features beside its score.
    pack.spec.classifier.embeddingOutput = CROP_OUTPUTS.indexOf('features');
  } else {
    pack.spec.classifier = {
      model: backbone.onnx,
      preprocess: { ...backbone.preprocess, mean: [...backbone.preprocess.mean], std: [...backbone.preprocess.std] },
      cropMargin: c.cropMargin,
      outputIndex: 0,
      embeddingOutput: 0,
    };
  }
  const key = sha256(
    Buffer.from(
      JSON.stringify({
        backbone: backbone.sha256,
        precision,
        detector: pack.manifest.detector,
        verifier: backbone.kind === 'imagenet' ? pack.manifest.verifier : undefined,
        cutoffs: pack.manifest.cutoffs,
        cropMargin: c.cropMargin,
        preprocess: backbone.preprocess,
      }),
    ),
  );
  return { pipeline: await addon.createPipeline(pack.spec), key, detected: pack.manifest.cutoffs.detected };
}

async function readCache(file: string): Promise<Record<string, CacheEntry>> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Record<string, CacheEntry>;
  } catch {
    return {};
  }
}

async function embedChunk(
  addon: NativeAddon,
  pipeline: NativePipeline,
  files: Buffer[],
  detected: number,
): Promise<CacheEntry[]> {
  const results = await addon.analyze(pipeline, files.map((data) => ({ data, encoding: 'bytes' as const })));
  return results.map((r): CacheEntry => {
    if (!r.ok) return { skipped: describeFailure(r) };
    if (r.detection !== 'detected' || !r.output) {
      const confidence = r.cat ? r.cat.confidence.toFixed(3) : 'none';
      return { skipped: r.verification && !r.verification.passed ? `the verifier sees a look-alike, not a cat (look-alike classes ${r.verification.lookalikeMass})` : `no cat detected (confidence ${confidence}, needs ${detected})` };
    }
    const bytes = Buffer.alloc(r.output.length * 4);
    r.output.forEach((v, i) => bytes.writeFloatLE(v, i * 4));
    return { embedding: bytes.toString('base64') };
  });
}

function toEmbedded(photo: LabelledPhoto, entry: CacheEntry): Embedded {
  if ('skipped' in entry) return { photo, skipped: entry.skipped };
  const bytes = Buffer.from(entry.embedding, 'base64');
  return { photo, embedding: Float64Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4)) };
}

/** Every photo's embedding or reason to skip, in the photos' order. */
export async function embedPhotos(photos: readonly LabelledPhoto[], options: EmbedOptions): Promise<Embedded[]> {
  const addon = loadAddon();
  addon.configure({ providers: ['cpu'], deviceId: 0, trtCacheDir: os.tmpdir(), trtFp16: false, poolThreads: os.availableParallelism(), intraOpThreads: 1 });
  const { pipeline, key, detected } = await openPipeline(addon, options.baseDir, options.backbone);
  const cacheFile = path.join(options.cacheDir, `${key}.json`);
  const cache = await readCache(cacheFile);
  const out: Embedded[] = [];
  let cached = 0;
  let computed = 0;
  try {
    for (let first = 0; first < photos.length; first += CHUNK) {
      const chunk = photos.slice(first, first + CHUNK);
      const entries: Array<CacheEntry | null> = [];
      const todo: Array<{ at: number; sha: string; data: Buffer }> = [];
      for (const photo of chunk) {
        const data = await readFile(photo.file).catch((error: Error) => error);
        if (data instanceof Error) {
          entries.push({ skipped: `cannot read: ${data.message}` });
          continue;
        }
        const sha = sha256(data);
        const hit = cache[sha];
        if (hit) cached++;
        else todo.push({ at: entries.length, sha, data });
        entries.push(hit ?? null);
      }
      if (todo.length > 0) {
        const fresh = await embedChunk(addon, pipeline, todo.map((t) => t.data), detected);
        todo.forEach((t, k) => {
          entries[t.at] = fresh[k]!;
          cache[t.sha] = fresh[k]!;
        });
        computed += todo.length;
      }
      chunk.forEach((photo, k) => out.push(toEmbedded(photo, entries[k]!)));
      const skipped = out.filter((e) => 'skipped' in e).length;
      options.progress(`embedding photos: ${out.length}/${photos.length} (${cached} cached, ${computed} computed, ${skipped} skipped)`, out.length === photos.length);
    }
  } finally {
    addon.releasePipeline(pipeline);
  }
  if (computed > 0) {
    await mkdir(options.cacheDir, { recursive: true });
    await writeFile(`${cacheFile}.partial`, JSON.stringify(cache));
    await rename(`${cacheFile}.partial`, cacheFile);
  }
  return out;
}
