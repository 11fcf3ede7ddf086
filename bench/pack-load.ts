// What loading a second version of bc-v1 costs while serving, with the real service on 127.0.0.1
// and its admin listener: the time `POST /packs/load` takes (read, sha256 check, sessions built,
// warm-up) and the process's resident memory before and after, for a head-only version made by
// train-head (bc-v1@2.0.0) and a self-contained copy of bc-v1 (bc-v1@1.3.0). Four clients predict
// throughout; their answers before and during each load are counted and timed.
//
//   node dist/bench/pack-load.js
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { postJson } from '../test/helpers/http';
import { adminPost, BENCH_ADMIN_KEY } from './admin-client';
import { photo, repoRoot } from '../test/helpers/paths';
import { storeEnv } from '../test/helpers/scan';
import { startServer, type TestServer } from '../test/helpers/server';
import { waitFor } from '../test/helpers/wait';

const LABELS = {
  discomfort: ['004_oxford_Persian_163.jpg', '005_oxford_British_Shorthair_139.jpg', '006_oxford_Maine_Coon_144.jpg', '007_oxford_Siamese_151.jpg'],
  comfort: ['018_oxford_Abyssinian_13.jpg', '019_oxford_Bengal_109.jpg', '020_oxford_Egyptian_Mau_10.jpg', '021_oxford_British_Shorthair_113.jpg'],
};

function rssMiB(pid: number): number {
  const kb = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
  return Math.round(kb / 1024);
}

function prepareModels(): string {
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'pack-load-'));
  const models = path.join(tmp, 'models');
  for (const id of ['bc-v1', 'bc-legacy']) cpSync(path.join(repoRoot, 'models', id), path.join(models, id), { recursive: true });
  const csv = path.join(tmp, 'labels.csv');
  writeFileSync(csv, `path,label\n${Object.entries(LABELS).flatMap(([label, files]) => files.map((f) => `${photo(f)},${label}`)).join('\n')}\n`);
  execFileSync(process.execPath, [path.join(repoRoot, 'dist/src/cli/main.js'), 'train-head', '--data', csv, '--out', path.join(models, 'bc-v1@2.0.0'), '--id', 'bc-v1', '--version', '2.0.0', '--cache', path.join(tmp, 'cache')], { stdio: 'ignore' });
  const copy = path.join(models, 'bc-v1@1.3.0');
  cpSync(path.join(models, 'bc-v1'), copy, { recursive: true });
  const manifest = JSON.parse(readFileSync(path.join(copy, 'manifest.json'), 'utf8'));
  writeFileSync(path.join(copy, 'manifest.json'), JSON.stringify({ ...manifest, version: '1.3.0' }));
  return models;
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN;

async function main(): Promise<void> {
  const models = prepareModels();
  const server: TestServer = await startServer({
    ...storeEnv(mkdtempSync(path.join(os.tmpdir(), 'pack-load-data-')), null),
    CATCOMFORT_MODELS_DIR: models,
    CATCOMFORT_ADMIN_PORT: '0',
    CATCOMFORT_ADMIN_KEYS: BENCH_ADMIN_KEY,
  });
  const port = await waitFor('the admin listener', () => Number(/"admin_port":(\d+)/.exec(server.output())?.[1]) || null);
  const image = readFileSync(photo('000_skimage_chelsea.png')).toString('base64');
  const latencies: Array<{ at: number; ms: number; status: number }> = [];
  let stop = false;
  const client = async () => {
    while (!stop) {
      const t = performance.now();
      const res = await postJson(`${server.url}/v2/predict`, { image });
      latencies.push({ at: t, ms: performance.now() - t, status: res.status });
    }
  };
  const clients = Array.from({ length: 4 }, client);
  const settle = () => new Promise((r) => setTimeout(r, 3000));
  const rows: string[] = [];
  try {
    await settle();
    const baseline = rssMiB(server.child.pid!);
    for (const [version, what] of [['2.0.0', 'head-only version (train-head)'], ['1.3.0', 'self-contained copy of bc-v1']] as const) {
      const before = rssMiB(server.child.pid!);
      const from = performance.now();
      const loaded = await adminPost(port, '/packs/load', { dir: path.join(models, `bc-v1@${version}`), role: 'shadow' });
      const to = performance.now();
      if (loaded.status !== 200) throw new Error(`load ${version}: ${loaded.text}`);
      await settle();
      const after = rssMiB(server.child.pid!);
      const idle = latencies.filter((l) => l.at < from && l.at > from - 3000).map((l) => l.ms).sort((a, b) => a - b);
      const during = latencies.filter((l) => l.at >= from && l.at <= to).map((l) => l.ms).sort((a, b) => a - b);
      rows.push(
        `| bc-v1@${version}, ${what} | ${loaded.ms} | ${before} → ${after} (+${after - before}) | ${during.length}, p50 ${percentile(during, 0.5).toFixed(1)} / p99 ${percentile(during, 0.99).toFixed(1)} | p50 ${percentile(idle, 0.5).toFixed(1)} / p99 ${percentile(idle, 0.99).toFixed(1)} |`,
      );
      const unloaded = await adminPost(port, '/packs/unload', { pack: `bc-v1@${version}` });
      if (unloaded.status !== 200) throw new Error(`unload ${version}: ${unloaded.text}`);
      await settle();
    }
    const errors = latencies.filter((l) => l.status !== 200).length;
    process.stdout.write(
      `Service RSS with bc-v1 and bc-legacy serving: ${baseline} MiB; ${latencies.length} predicts by 4 clients, ${errors} not 200.\n\n` +
        '| version loaded beside bc-v1@1.3.0 (as shadow) | load, ms | RSS MiB before → after | predicts during the load, ms | predicts in the 3 s before, ms |\n|---|---:|---|---|---|\n' +
        `${rows.join('\n')}\n`,
    );
  } finally {
    stop = true;
    await Promise.all(clients);
    await server.stop();
  }
}

void main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exitCode = 1;
});
