// Calibrates and quantizes a pack's float detector (int8 QDQ), for choosing settings by measurement
// and for writing the pack's calibration table:
//   node dist/src/tools/quantize-detector.js [--pack bc-v1] [--method minmax|p99.99] [--float-convs a,b]
//        [--activations uint8|int8] [--out dir]
// Calibration photos: every sixth photo of ../shared/fixtures/photos-dev by file name (kept out of
// quality reports). Writes <out>/<detector>.int8.onnx and <out>/<detector>.int8-calibration.json.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { sharedDirFrom } from '../config';
import { loadAddon } from '../native/addon';
import { decodeModel } from '../graphs/onnx/read';
import { readManifest } from '../packs/pack';
import { calibrate, type RangeMethod } from '../graphs/quantize/calibrate';
import { activationTensors } from '../graphs/quantize/qdq';
import { int8FromTable, type CalibrationTable } from '../graphs/quantize/table';

const repoRoot = path.resolve(__dirname, '../../..');

/** Every sixth photo of photos-dev, by file name: the calibration set. */
export function calibrationPhotos(devDir: string): string[] {
  const files = readdirSync(devDir).filter((f) => /\.(jpe?g|png|webp)$/i.test(f)).sort();
  return files.filter((_, i) => i % 6 === 0);
}

function method(text: string): RangeMethod {
  if (text === 'minmax') return { kind: 'minmax' };
  const p = /^p(\d+(?:\.\d+)?)$/.exec(text);
  if (p && Number(p[1]) > 50 && Number(p[1]) <= 100) return { kind: 'percentile', percentile: Number(p[1]) };
  throw new Error(`--method must be minmax or pNN (e.g. p99.99), got ${text}`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { pack: { type: 'string', default: 'bc-v1' }, method: { type: 'string', default: 'minmax' }, 'float-convs': { type: 'string', default: '' }, activations: { type: 'string', default: 'uint8' }, out: { type: 'string' } },
  });
  const packDir = path.join(repoRoot, 'models', values.pack!);
  const manifest = await readManifest(packDir);
  const out = path.resolve(values.out ?? packDir);
  const devDir = path.join(sharedDirFrom(process.env), 'fixtures/photos-dev');
  const addon = loadAddon();
  addon.configure({ providers: ['cpu'], deviceId: 0, trtCacheDir: os.tmpdir(), trtFp16: false, poolThreads: os.availableParallelism(), intraOpThreads: 1 });
  const float = readFileSync(path.join(packDir, manifest.detector.file));
  const model = decodeModel(float);
  const floatConvs = new Set(values['float-convs']!.split(',').filter(Boolean));
  const tensors = activationTensors(model, floatConvs);
  const photos = calibrationPhotos(devDir);
  const inputName = model.graph.inputs[0]!.name;
  const inputs = await Promise.all(
    photos.map(async (file) => {
      const { tensor } = await addon.preprocessImage(readFileSync(path.join(devDir, file)), manifest.detector.preprocess);
      return [{ ...tensor, name: inputName }];
    }),
  );
  const rangeMethod = method(values.method!);
  const ranges = await calibrate(model, tensors, inputs, rangeMethod, (m, i) => addon.runModel(m, i));
  const base = manifest.detector.file.replace(/\.onnx$/, '');
  const table: CalibrationTable = { method: values.method!, photos, activations: values.activations === 'int8' ? 'int8' : 'uint8', floatConvs: [...floatConvs].sort(), ranges };
  writeFileSync(path.join(out, `${base}.int8-calibration.json`), `${JSON.stringify(table, null, 1)}\n`);
  const quantized = int8FromTable(float, table);
  writeFileSync(path.join(out, `${base}.int8.onnx`), quantized);
  process.stdout.write(`${tensors.length} activations calibrated on ${photos.length} photos (${values.method}); ${quantized.length} bytes\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`quantize: ${(error as Error)?.stack ?? String(error)}\n`);
  process.exitCode = 1;
});
