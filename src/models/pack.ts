// Loads one model pack folder: manifest validation, sha256 checks of the model files, the
// in-memory graph rewrites (the detector's dynamic batch; Focus blocks as SpaceToDepth, for the
// GPU providers), and the native pipeline spec.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { BatchingConfig } from '../config';
import { log } from '../log';
import type { ClassifierSpec, DetectorSpec, PipelineSpec, PreprocessSpec } from '../native/addon';
import { validateManifest, type Manifest, type PreprocessManifest } from './manifest';
import { summarizeOnnx, withDynamicBatch } from './onnx-batch';
import { withFocusAsSpaceToDepth } from './onnx-focus';

export class PackError extends Error {}

export function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

export async function readManifest(dir: string): Promise<Manifest> {
  const file = path.join(dir, 'manifest.json');
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new PackError(`Cannot read model manifest ${file}: ${(error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new PackError(`Model manifest ${file} is not valid JSON: ${(error as Error).message}`);
  }
  return validateManifest(json, file);
}

/** Reads a model file and checks it against the manifest's sha256. */
export async function readModelFile(dir: string, file: string, expected: string): Promise<Buffer> {
  const full = path.join(dir, file);
  let data: Buffer;
  try {
    data = await readFile(full);
  } catch {
    throw new PackError(
      `Model file ${full} is missing (expected sha256 ${expected}). Run "npm run models:fetch" ` +
        '(set CATCOMFORT_MODEL_MIRROR to a folder holding a copy when there is no internet).',
    );
  }
  const actual = sha256(data);
  if (actual !== expected) {
    throw new PackError(`Model file ${full} has sha256 ${actual}, expected ${expected}. Replace it or fix the manifest.`);
  }
  return data;
}

function preprocessSpec(p: PreprocessManifest): PreprocessSpec {
  return { ...p, mean: [...p.mean], std: [...p.std] };
}

/** Rewrites what some providers cannot run (onnx-focus.ts); logs the operators left at debug level. */
function forEveryProvider(model: Buffer, what: string): Buffer {
  const { model: out, rewritten } = withFocusAsSpaceToDepth(model);
  log.debug('model graph', { model: what, focus_blocks_rewritten: rewritten, op_types: [...new Set(summarizeOnnx(out).nodeOpTypes)].sort() });
  return out;
}

export type Precision = 'int8' | 'fp32';

export interface LoadedPack {
  dir: string;
  manifest: Manifest;
  spec: PipelineSpec;
  /** The detector's precision: int8 when asked for and the pack has it, else fp32. */
  precision: Precision;
}

export interface PackLimits {
  maxPixels: number;
  batching: BatchingConfig;
  /** Images per session Run; null = a whole request batch with all its views in one Run. */
  sessionBatch: number | null;
  /** PipelineSpec.jpegShrinkOnLoad; default true (false only to measure the full-size decode). */
  jpegShrinkOnLoad?: boolean;
  /** The detector precision wanted; int8 is used where the pack has it (default fp32). */
  precision?: Precision;
}

export async function loadPack(dir: string, limits: PackLimits): Promise<LoadedPack> {
  const manifest = await readManifest(dir);
  const d = manifest.detector;
  const c = manifest.classifier;
  const precision: Precision = limits.precision === 'int8' && d.int8 ? 'int8' : 'fp32';
  const file = precision === 'int8' ? d.int8! : d;
  let detectorModel = await readModelFile(dir, file.file, file.sha256);
  if (d.dynamicBatch) detectorModel = withDynamicBatch(detectorModel, d.dynamicBatch.reshapeFrom, d.dynamicBatch.reshapeTo);
  detectorModel = forEveryProvider(detectorModel, `${manifest.id} detector`);
  const classifierModel = forEveryProvider(await readModelFile(dir, c.file, c.sha256), `${manifest.id} classifier`);

  const detector: DetectorSpec = {
    model: detectorModel,
    preprocess: preprocessSpec(d.preprocess),
    output: structuredClone(d.output),
    scoreFloor: d.scoreFloor,
    nmsIou: d.nmsIou,
    views: [...d.views],
    viewCombine: d.viewCombine ?? 'max',
    calibration: d.calibration.map(([raw, cal]) => [raw, cal] as [number, number]),
  };
  const classifier: ClassifierSpec = {
    model: classifierModel,
    preprocess: preprocessSpec(c.preprocess),
    cropMargin: c.cropMargin,
    outputIndex: c.outputIndex,
  };
  return {
    dir,
    manifest,
    precision,
    spec: {
      detector,
      classifier,
      cutoffs: { detected: manifest.cutoffs.detected, lowConfidence: manifest.cutoffs.lowConfidence },
      maxPixels: limits.maxPixels,
      maxSessionBatch: limits.sessionBatch ?? (manifest.batching?.maxBatchSize ?? limits.batching.maxBatchSize) * d.views.length,
      jpegShrinkOnLoad: limits.jpegShrinkOnLoad ?? true,
    },
  };
}
