// The provider probe's verdicts, remembered in the data folder (provider-probes.json), so that a
// restart with the same software on the same GPUs does not probe again (the probe builds and runs
// every session: tens of seconds on a GPU). A verdict is keyed by all it proved: the probed
// settings, the ONNX Runtime and provider libraries beside the addon (sha256), every pack's
// manifest (which holds its model files' sha256), and the GPUs with their driver
// (/proc/driver/nvidia). Only a verdict in which every configured provider passed is kept; any
// other outcome is probed again at the next start.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { sha256 } from '../../hash';
import type { RuntimeConfig } from '../../config';

export type Verdict = Pick<RuntimeConfig, 'providers' | 'pinnedMemory'>;

/** Where the service keeps its verdicts: provider-probes.json in its data folder. */
export function verdictsFile(dataDir: string): string {
  return path.join(dataDir, 'provider-probes.json');
}

const release = path.resolve(__dirname, '../../../../build/Release');
const NVIDIA = '/proc/driver/nvidia';

/** Each file's name and sha256, sorted; [] when the folder is missing. */
function hashes(dir: string, keep: (name: string) => boolean): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter(keep)
    .sort()
    .map((name) => `${name} ${sha256(readFileSync(path.join(dir, name)))}`);
}

/** The driver version line and each GPU's information file (model, bus), or [] without an NVIDIA driver. */
function gpus(): string[] {
  const version = existsSync(path.join(NVIDIA, 'version')) ? [readFileSync(path.join(NVIDIA, 'version'), 'utf8').split('\n')[0]!] : [];
  const dir = path.join(NVIDIA, 'gpus');
  const boards = existsSync(dir) ? readdirSync(dir).sort().map((bus) => readFileSync(path.join(dir, bus, 'information'), 'utf8')) : [];
  return [...version, ...boards];
}

/** The key of a probe of `config`: what its verdict depends on. */
export function probeKey(config: RuntimeConfig): string {
  const { providers, deviceId, trtCacheDir, trtFp16, cudnnConvAlgoSearch, pinnedMemory, precision, poolThreads, intraOpThreads, sessionBatch, maxPixels, batching, modelsDir } = config;
  // A probe on a simulated device ran the sessions at one size only: never a real start's verdict.
  const { benchSimulate, benchSimulateDecode, benchCores } = config;
  const settings = { providers, deviceId, trtCacheDir, trtFp16, cudnnConvAlgoSearch, pinnedMemory, precision, poolThreads, intraOpThreads, sessionBatch, maxPixels, batching, benchSimulate, benchSimulateDecode, benchCores };
  const packs = existsSync(modelsDir)
    ? readdirSync(modelsDir)
        .sort()
        .filter((name) => existsSync(path.join(modelsDir, name, 'manifest.json')))
        .map((name) => `${name} ${sha256(readFileSync(path.join(modelsDir, name, 'manifest.json')))}`)
    : [];
  const libraries = hashes(release, (name) => /\.so(\.\d+)*$/.test(name) || name.endsWith('.node'));
  return sha256(JSON.stringify({ settings, libraries, packs, gpus: gpus() }));
}

async function readAll(file: string): Promise<Record<string, Verdict & { at: string }>> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as Record<string, Verdict & { at: string }>;
  } catch {
    return {};
  }
}

/** The verdict remembered for `key`, or null. */
export async function rememberedVerdict(file: string, key: string): Promise<(Verdict & { at: string }) | null> {
  return (await readAll(file))[key] ?? null;
}

/** Remembers `verdict` for `key` (the file keeps the newest few, written whole, then renamed into place). */
export async function rememberVerdict(file: string, key: string, verdict: Verdict): Promise<void> {
  const all = { ...(await readAll(file)), [key]: { ...verdict, at: new Date().toISOString() } };
  const newest = Object.fromEntries(Object.entries(all).sort(([, a], [, b]) => b.at.localeCompare(a.at)).slice(0, 8));
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(`${file}.partial`, `${JSON.stringify(newest, null, 2)}\n`);
  await rename(`${file}.partial`, file);
}
