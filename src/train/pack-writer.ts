// Writes a model pack made by train-head, checked by the service's own manifest validation and
// written beside the target, then renamed into place.
// - ImageNet backbone: manifest.json (filesFrom the base pack; its detector, verifier, self-check and backbone
//   sections with their sha256; a classifier section naming head.json, reference false and the
//   training record), head.json (1280 weights and a bias) and MODEL_CARD.md: a few kilobytes.
// - Detector stage: manifest.json (the base pack's detector section and cutoffs, no verifier: it
//   reads the ImageNet backbone, which this classifier does not run), the classifier ONNX (backbone
//   + head), copies of the base pack's detector files and self-check photos, MODEL_CARD.md.
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { encodeHead } from '../graphs/imagenet/head';
import { validateManifest, type Manifest, type TrainingManifest } from '../packs/manifest';
import { readModelFile } from '../packs/pack';
import { sha256 } from '../hash';
import type { Backbone } from './backbone';
import type { LogisticHead } from './logistic';

export const CLASSIFIER_FILE = 'classifier.onnx';
export const HEAD_FILE = 'head.json';

/** The head alone (ImageNet backbone), or one ONNX network (detector stage). */
export type TrainedClassifier = { kind: 'head'; head: LogisticHead } | { kind: 'network'; onnx: Buffer };

export interface PackInput {
  base: Manifest;
  baseDir: string;
  outDir: string;
  id: string;
  version: string;
  classifier: TrainedClassifier;
  backbone: Backbone;
  threshold: number;
  training: TrainingManifest;
  card: (manifest: Manifest) => string;
  /** Replace an existing pack folder at outDir. */
  force: boolean;
}

/** The files the pack holds itself: name and bytes. */
function ownFiles(classifier: TrainedClassifier): { file: string; data: Buffer } {
  return classifier.kind === 'head'
    ? { file: HEAD_FILE, data: Buffer.from(encodeHead(classifier.head)) }
    : { file: CLASSIFIER_FILE, data: classifier.onnx };
}

export function trainedManifest(input: Omit<PackInput, 'outDir' | 'card' | 'force' | 'baseDir'>): Manifest {
  const { base, training, backbone } = input;
  const n = training.counts;
  const photos = n.train.comfort + n.train.discomfort + n.validation.comfort + n.validation.discomfort;
  const own = ownFiles(input.classifier);
  const common = {
    reference: false,
    training,
    preprocess: structuredClone(backbone.preprocess),
    cropMargin: base.classifier.cropMargin,
  };
  const manifest: Manifest = {
    id: input.id,
    version: input.version,
    name: input.id,
    description:
      `Comfort head trained by catcomfort train-head on ${photos} operator-labelled photos ` +
      `(validation balanced accuracy ${(training.validation.balancedAccuracy * 100).toFixed(1)} %), over the detector and backbone of ${base.id} ${base.version}`,
    defaultThreshold: input.threshold,
    cutoffs: structuredClone(base.cutoffs),
    detector: structuredClone(base.detector),
    classifier:
      backbone.kind === 'imagenet'
        ? {
            ...common,
            backbone: structuredClone(backbone.manifest),
            head: { file: own.file, sha256: sha256(own.data) },
            license: `Head: trained on the operator's own photos. Backbone: ${backbone.manifest.license}`,
          }
        : {
            ...common,
            file: own.file,
            sha256: sha256(own.data),
            license: `Head: trained on the operator's own photos. Backbone: ${base.detector.license}`,
            outputIndex: 0,
          },
  };
  if (backbone.kind === 'imagenet') {
    manifest.filesFrom = base.id;
    if (base.verifier) manifest.verifier = structuredClone(base.verifier);
  }
  if (base.selfCheck) manifest.selfCheck = structuredClone(base.selfCheck);
  if (base.batching) manifest.batching = structuredClone(base.batching);
  return validateManifest(manifest, `the pack written for ${input.id}`);
}

async function isEmptyOrMissing(dir: string): Promise<boolean> {
  const entries = await readdir(dir).catch(() => null);
  return entries === null || entries.length === 0;
}

/** The base pack's detector files and int8 self-check photos, copied into a detector-stage pack. */
async function detectorCopies(input: PackInput): Promise<Array<{ file: string; data: Buffer }>> {
  if (input.backbone.kind === 'imagenet') return [];
  const { int8 } = input.base.detector;
  const files = [input.base.detector, ...(int8 ? [int8, int8.calibration] : []), ...(input.base.selfCheck?.photos ?? [])];
  return Promise.all(files.map(async (f) => ({ file: f.file, data: await readModelFile(input.baseDir, f.file, f.sha256) })));
}

export async function writePack(input: PackInput): Promise<Manifest> {
  if (!input.force && !(await isEmptyOrMissing(input.outDir))) {
    throw new Error(`${input.outDir} exists and is not empty; pass --force to replace it`);
  }
  const manifest = trainedManifest(input);
  const files = [ownFiles(input.classifier), ...(await detectorCopies(input))];
  const staging = `${input.outDir}.partial-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  try {
    for (const { file, data } of files) await writeFile(path.join(staging, file), data);
    await writeFile(path.join(staging, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    await writeFile(path.join(staging, 'MODEL_CARD.md'), input.card(manifest));
    await rm(input.outDir, { recursive: true, force: true });
    await rename(staging, input.outDir);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
  return manifest;
}
