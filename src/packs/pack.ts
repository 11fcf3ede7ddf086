// Loads one model pack folder: manifest validation, sha256 checks of the model files, the
// in-memory graph rewrites (the detector's dynamic batch; Focus blocks as SpaceToDepth, for the
// GPU providers), and the native pipeline spec.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { sha256 } from '../hash';
import type { BatchingConfig } from '../pipeline/batcher';
import { log } from '../log';
import type { ClassifierSpec, DetectorSpec, LowLoadSessions, PipelineSpec, PreprocessSpec, VerifierSpec } from '../native/addon';
import { CROP_OUTPUTS, composeCropNetwork } from '../graphs/imagenet/crop-network';
import { parseHead, type HeadWeights } from '../graphs/imagenet/head';
import { classList, validateManifest, type HeadClassifierManifest, type Manifest, type PreprocessManifest, type VerifierManifest } from './manifest';
import { decodeModel } from '../graphs/onnx/read';
import { backboneFile, packFileDir } from './pack-files';
import { summarizeOnnx, withDynamicBatch } from '../graphs/onnx/batch';
import { withFocusAsSpaceToDepth } from '../graphs/onnx/focus';

export class PackError extends Error {}

const PACK_ID = /^[a-z0-9][a-z0-9-]{0,63}$/;

/**
 * The one rule for a pack folder's name, wherever a pack is taken (start-up, `catcomfort packs load`,
 * `catcomfort validate-pack`): its id is lower-case letters, digits and dashes, and the folder is named
 * `ID`, or `ID@VERSION` for a version staged beside the serving one.
 */
export function checkPackFolder(dir: string, manifest: Manifest): void {
  if (!PACK_ID.test(manifest.id)) throw new PackError(`Pack id "${manifest.id}" in ${dir} must be lower-case letters, digits and dashes`);
  const name = path.basename(path.resolve(dir));
  if (name !== manifest.id && name !== `${manifest.id}@${manifest.version}`) {
    throw new PackError(`Model pack folder ${dir} holds ${manifest.id} ${manifest.version}; name it "${manifest.id}" or "${manifest.id}@${manifest.version}"`);
  }
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
  return readFileChecked(path.join(dir, file), expected);
}

async function readFileChecked(full: string, expected: string): Promise<Buffer> {
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

/** A manifest's preprocessing as the addon takes it (its own arrays). */
export function preprocessSpec(p: PreprocessManifest): PreprocessSpec {
  return { ...p, mean: [...p.mean], std: [...p.std] };
}

/** Rewrites what some providers cannot run (onnx/focus.ts); logs the operators left at debug level. */
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
  /** The ImageNet backbone's precision, as asked for; null when the classifier has none. */
  backbonePrecision: Precision | null;
}

export interface PackLimits {
  maxPixels: number;
  batching: BatchingConfig;
  /** Images per session Run; null = a whole request batch with all its views in one Run. */
  sessionBatch: number | null;
  /** PipelineSpec.jpegShrinkOnLoad; default true (false only to measure the full-size decode). */
  jpegShrinkOnLoad?: boolean;
  /** PipelineSpec.lowLoad (runtime.ts lowLoadFor); default none. */
  lowLoad?: LowLoadSessions;
  /**
   * The precision wanted (default fp32): the detector's, where the pack has an int8 detector; the
   * ImageNet backbone's: int8 (QLinear ops, for the CPU provider) or its float copy (for providers
   * without QLinear kernels).
   */
  precision?: Precision;
}

/**
 * A file of the pack, from its folder or (filesFrom) its base pack's, sha256-checked. A file of the
 * base pack that no longer matches means the base changed under a pack trained on it.
 */
export async function readPackFile(dir: string, manifest: Manifest, file: { file: string; sha256: string }, what: string): Promise<Buffer> {
  const from = packFileDir(dir, manifest, file.file);
  if (from === dir) return readModelFile(dir, file.file, file.sha256);
  const full = path.join(from, file.file);
  const data = await readFile(full).catch(() => {
    throw new PackError(`Pack ${manifest.id} takes its ${what} ${file.file} from pack ${manifest.filesFrom}, but ${full} is missing`);
  });
  const actual = sha256(data);
  if (actual !== file.sha256) {
    throw new PackError(
      `Pack ${manifest.id} was made for the ${what} ${file.file} with sha256 ${file.sha256}, but pack ${manifest.filesFrom} now has one ` +
        `with sha256 ${actual}: retrain the head on the current ${manifest.filesFrom} (catcomfort train-head) or restore the old ${manifest.filesFrom}`,
    );
  }
  return data;
}

/**
 * The crop network of a head classifier (src/graphs/imagenet/crop-network.ts): the backbone at the
 * precision wanted with the head on it. The bench's peers run the same file.
 */
export async function cropNetwork(dir: string, manifest: Manifest, c: HeadClassifierManifest, precision: Precision): Promise<Buffer> {
  const backbone = await readPackFile(dir, manifest, backboneFile(c.backbone, precision), 'classifier backbone');
  const headFile = await readPackFile(dir, manifest, c.head, 'classifier head');
  let head: HeadWeights;
  try {
    head = parseHead(headFile.toString('utf8'), `${manifest.id} ${c.head.file}`);
  } catch (error) {
    throw new PackError((error as Error).message);
  }
  return composeCropNetwork(decodeModel(backbone), head);
}

function verifierSpec(v: VerifierManifest): VerifierSpec {
  return {
    probsOutput: CROP_OUTPUTS.indexOf('probs'),
    maxCandidates: v.maxCandidates,
    lookalikeClasses: classList(v.rule.lookalikeClasses),
    maxLookalikeMass: v.rule.maxLookalikeMass,
    catClasses: classList(v.rule.catClasses),
    dogClasses: classList(v.rule.dogClasses),
  };
}

export async function loadPack(dir: string, limits: PackLimits): Promise<LoadedPack> {
  const manifest = await readManifest(dir);
  const d = manifest.detector;
  const c = manifest.classifier;
  const precision: Precision = limits.precision === 'int8' && d.int8 ? 'int8' : 'fp32';
  const backbonePrecision: Precision | null = 'backbone' in c ? (limits.precision ?? 'fp32') : null;
  const file = precision === 'int8' ? d.int8! : d;
  let detectorModel = await readPackFile(dir, manifest, file, 'detector');
  if (d.dynamicBatch) detectorModel = withDynamicBatch(detectorModel, d.dynamicBatch.reshapeFrom, d.dynamicBatch.reshapeTo);
  detectorModel = forEveryProvider(detectorModel, `${manifest.id} detector`);
  const classifierModel =
    'backbone' in c
      ? await cropNetwork(dir, manifest, c, backbonePrecision ?? 'fp32')
      : forEveryProvider(await readPackFile(dir, manifest, c, 'classifier'), `${manifest.id} classifier`);

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
    outputIndex: 'backbone' in c ? CROP_OUTPUTS.indexOf('p_discomfort') : c.outputIndex,
    ...(manifest.verifier && { verifier: verifierSpec(manifest.verifier) }),
  };
  return {
    dir,
    manifest,
    precision,
    backbonePrecision,
    spec: {
      detector,
      classifier,
      cutoffs: { detected: manifest.cutoffs.detected, lowConfidence: manifest.cutoffs.lowConfidence },
      maxPixels: limits.maxPixels,
      maxSessionBatch: limits.sessionBatch ?? (manifest.batching?.maxBatchSize ?? limits.batching.maxBatchSize) * d.views.length,
      jpegShrinkOnLoad: limits.jpegShrinkOnLoad ?? true,
      ...(limits.lowLoad && { lowLoad: limits.lowLoad }),
    },
  };
}
