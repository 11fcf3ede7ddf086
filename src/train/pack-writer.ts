// Writes a model pack made by train-head: manifest.json (the base pack's detector section and
// cutoffs, a classifier section for the composed file with its sha256, reference false and the
// training record), the classifier ONNX, a copy of the base pack's detector file, MODEL_CARD.md.
// The pack is written beside the target and renamed into place, and checked by the service's own
// manifest validation before that.
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { validateManifest, type Manifest, type TrainingManifest } from '../models/manifest';
import { readModelFile, sha256 } from '../models/pack';
import type { Backbone } from './backbone';

export const CLASSIFIER_FILE = 'classifier.onnx';

export interface PackInput {
  base: Manifest;
  baseDir: string;
  outDir: string;
  id: string;
  classifier: Buffer;
  backbone: Backbone;
  threshold: number;
  training: TrainingManifest;
  card: (manifest: Manifest) => string;
  /** Replace an existing pack folder at outDir. */
  force: boolean;
}

export function trainedManifest(input: Omit<PackInput, 'outDir' | 'card' | 'force' | 'baseDir'>): Manifest {
  const { base, training } = input;
  const n = training.counts;
  const photos = n.train.comfort + n.train.discomfort + n.validation.comfort + n.validation.discomfort;
  const manifest: Manifest = {
    id: input.id,
    version: '1.0.0',
    name: input.id,
    description:
      `Comfort head trained by catcomfort train-head on ${photos} operator-labelled photos ` +
      `(validation balanced accuracy ${(training.validation.balancedAccuracy * 100).toFixed(1)} %), over the detector and backbone of ${base.id} ${base.version}`,
    defaultThreshold: input.threshold,
    cutoffs: structuredClone(base.cutoffs),
    detector: structuredClone(base.detector),
    classifier: {
      file: CLASSIFIER_FILE,
      sha256: sha256(input.classifier),
      reference: false,
      training,
      license: `Head: trained on the operator's own photos. Backbone: ${base.detector.license}`,
      preprocess: structuredClone(input.backbone.preprocess),
      cropMargin: base.classifier.cropMargin,
      outputIndex: 0,
    },
  };
  if (base.batching) manifest.batching = structuredClone(base.batching);
  return validateManifest(manifest, `the pack written for ${input.id}`);
}

async function isEmptyOrMissing(dir: string): Promise<boolean> {
  const entries = await readdir(dir).catch(() => null);
  return entries === null || entries.length === 0;
}

export async function writePack(input: PackInput): Promise<Manifest> {
  if (!input.force && !(await isEmptyOrMissing(input.outDir))) {
    throw new Error(`${input.outDir} exists and is not empty; pass --force to replace it`);
  }
  const manifest = trainedManifest(input);
  // The base pack's detector files: the float one, and the int8 one with its calibration table.
  const { int8 } = input.base.detector;
  const detectorFiles = [input.base.detector, ...(int8 ? [int8, int8.calibration] : [])];
  const copies = await Promise.all(detectorFiles.map(async (f) => ({ file: f.file, data: await readModelFile(input.baseDir, f.file, f.sha256) })));
  const staging = `${input.outDir}.partial-${process.pid}`;
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true });
  try {
    await writeFile(path.join(staging, CLASSIFIER_FILE), input.classifier);
    for (const { file, data } of copies) await writeFile(path.join(staging, file), data);
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
