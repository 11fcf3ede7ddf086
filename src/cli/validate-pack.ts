// `catcomfort validate-pack DIR`: what the service checks when it loads a pack, reported check by
// check: the manifest's schema and id, the sha256 of its model files, then one inference on the
// warm-up cat photo (models/warmup-cat.png), which must find the cat, at the precision the pack's
// int8 self-check allows on this CPU.
import path from 'node:path';
import { toAnalysis } from '../pipeline/analysis';
import type { Manifest } from '../packs/manifest';
import { checkPackFolder, readManifest, readPackFile } from '../packs/pack';
import { loadProven } from '../packs/precision-check';
import { packFileDir, packFiles } from '../packs/pack-files';
import { configureAddon, readWarmUpSample, registryOptions } from '../packs/runtime';
import { loadConfig } from '../config';
import { setLogLevel } from '../log';
import { parse, positionals } from './args';

const USAGE = `Usage: catcomfort validate-pack DIR

Checks the model pack in DIR as the service would load it, printing one line per check:
  manifest     manifest.json parses and matches the schema (src/packs/manifest.ts); the folder is
               named ID or ID@VERSION, as start-up and \`catcomfort packs load\` require
  detector, detector-int8, calibration, classifier | backbone, backbone-float, backbone-int8, head, reference-photo
               each model file the manifest names is there (in DIR, or in the base pack a
               trained pack takes its files from) and has the manifest's sha256
  inference    the pack loads (graph rewrites, ONNX Runtime sessions on CPU) and finds the cat in
               models/warmup-cat.png as "detected", at the precision the int8 self-check
               allows on this CPU (it says which, and why)
A check that cannot run because an earlier one failed is reported as skipped.

Exit codes: 0 the pack is valid, 1 a check failed, 2 bad usage.
`;

async function check(name: string, run: () => Promise<string>): Promise<boolean> {
  let outcome: { ok: boolean; detail: string };
  try {
    outcome = { ok: true, detail: await run() };
  } catch (error) {
    outcome = { ok: false, detail: (error as Error).message };
  }
  (outcome.ok ? process.stdout : process.stderr).write(`${outcome.ok ? 'ok  ' : 'FAIL'} ${name.padEnd(14)} ${outcome.detail}\n`);
  return outcome.ok;
}

function skipped(name: string, why: string): void {
  process.stderr.write(`skip ${name.padEnd(14)} ${why}\n`);
}

/** One inference on CPU with the pack's own views, calibration and cutoffs. */
async function testInference(dir: string): Promise<string> {
  const config = loadConfig(process.env);
  const { addon, info } = configureAddon({ ...config, providers: ['cpu'] });
  const { maxPixels } = config;
  const options = registryOptions(config, info);
  const { pipeline, choice } = await loadProven(addon, dir, options, { precision: options.precision, forced: options.precisionForced });
  try {
    const started = performance.now();
    const [result] = await addon.analyze(pipeline, [{ data: readWarmUpSample(), encoding: 'bytes' }]);
    const ms = Math.round(performance.now() - started);
    if (!result) throw new Error('the pipeline gave no result');
    const analysis = toAnalysis(result, maxPixels);
    const found = `detection ${analysis.detection}, confidence ${analysis.cat?.confidence ?? 0}, score ${analysis.score ?? 'none'} (${ms} ms)`;
    if (analysis.detection !== 'detected') throw new Error(`models/warmup-cat.png is a cat, but the pack reports ${found}`);
    return `models/warmup-cat.png: ${found}; ${choice.precision}: ${choice.reason}`;
  } finally {
    addon.releasePipeline(pipeline);
  }
}

export async function validatePackCommand(argv: string[]): Promise<number> {
  const parsed = parse(argv, USAGE);
  if (!parsed) return 0;
  const dir = path.resolve(positionals(parsed, 1, 'DIR', USAGE)[0]!);
  setLogLevel('warn'); // stdout is the report; the self-check's verdict is in the inference line
  let manifest: Manifest | undefined;
  const manifestOk = await check('manifest', async () => {
    manifest = await readManifest(dir);
    checkPackFolder(dir, manifest);
    return `${path.join(dir, 'manifest.json')}: ${manifest.id} ${manifest.version} (${manifest.name})${manifest.disabled ? ', disabled: the service will not load it' : ''}`;
  });
  if (!manifestOk || !manifest) {
    skipped('files', 'needs a valid manifest');
    skipped('inference', 'needs a valid manifest');
    return 1;
  }
  let filesOk = true;
  const m = manifest;
  for (const file of packFiles(m)) {
    filesOk = (await check(file.role, async () => {
      await readPackFile(dir, m, file, file.role);
      return `${path.join(path.relative(dir, packFileDir(dir, m, file.file)), file.file)}: sha256 ${file.sha256}`;
    })) && filesOk;
  }
  if (!filesOk) {
    skipped('inference', 'needs intact model files');
    return 1;
  }
  return (await check('inference', () => testInference(dir))) ? 0 : 1;
}
