// 12 MP phone photos against small ones, end to end at one client: p50 of /v2/predict over keep-alive
// for every fixture photo and its 12 MP version (bench/phone-photos.ts), with each Server-Timing
// stage's p50, for this tree and optionally an older one (a built worktree) side by side in one run:
// both services run at once and the client takes turns (a small photo here, there, then the phone
// photo here, there, ...), so both meet the same moments of the machine.
//   node dist/bench/phone-ratio.js [OLD_TREE]    (PHONE_ROUNDS rounds of the 39 pairs, default 3)
// PHONE_GAP_MS (default 0) waits that long before each request, as a camera sending a frame every so
// often would: the service is idle between requests, and whatever it gives back when idle it takes again.
// Each service runs as its tree deploys it (bin/catcomfort-service; `node dist/src/main.js` in trees
// older than the launcher) with the int8 detector.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fixturePhotos, freePort, installCleanup, percentile, repoRoot, sleep, stopChild } from './common';
import { phonePhotos } from './phone-photos';
import { predictBody } from './protocols';
import { API_KEY } from './servers';

const rounds = Number(process.env.PHONE_ROUNDS ?? 3);
const gapMs = Number(process.env.PHONE_GAP_MS ?? 0);

interface Tree {
  label: string;
  child: ChildProcess;
  /** Its scan store's folder, removed afterwards. */
  dataDir: string;
  url: string;
  small: Sample[];
  phone: Sample[];
}

interface Sample {
  ms: number;
  stages: Record<string, number>;
}

async function start(root: string, label: string): Promise<Tree> {
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cc-phone-ratio-'));
  const launcher = path.join(root, 'bin/catcomfort-service');
  const [command, args] = existsSync(launcher) ? [launcher, []] : [process.execPath, [path.join(root, 'dist/src/main.js')]];
  const child = spawn(command, args, {
    cwd: root,
    env: {
      ...process.env,
      PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`,
      CATCOMFORT_HOST: '127.0.0.1',
      CATCOMFORT_PORT: String(port),
      CATCOMFORT_API_KEYS: API_KEY,
      CATCOMFORT_PRECISION: 'int8',
      CATCOMFORT_LOG_LEVEL: 'warn',
      CATCOMFORT_DATA_DIR: dataDir,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const tree: Tree = { label, child, dataDir, url: `http://127.0.0.1:${port}/v2/predict`, small: [], phone: [] };
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`${label} exited during start-up`);
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.status === 200, () => false);
    if (ready) return tree;
    if (i > 1200) throw new Error(`${label} not ready in 5 minutes`);
    await sleep(250);
  }
}

async function predict(url: string, body: string): Promise<Sample> {
  const started = performance.now();
  const response = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', 'api-key': API_KEY } });
  await response.arrayBuffer();
  const ms = performance.now() - started;
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}`);
  const stages: Record<string, number> = {};
  for (const part of (response.headers.get('server-timing') ?? '').split(',')) {
    const m = /^\s*(\w+);dur=([\d.]+)/.exec(part);
    if (m) stages[m[1]!] = Number(m[2]);
  }
  return { ms, stages };
}

function p50(samples: Sample[], pick: (s: Sample) => number | undefined): number {
  const values = samples.map(pick).filter((v): v is number => v !== undefined).sort((a, b) => a - b);
  return values.length === 0 ? NaN : percentile(values, 50);
}

async function main(): Promise<void> {
  installCleanup();
  const small = fixturePhotos().map((p) => predictBody(readFileSync(p.path)));
  const phone = (await phonePhotos()).map((p) => predictBody(readFileSync(p.path)));
  const trees = [await start(repoRoot, 'this tree')];
  if (process.argv[2]) trees.push(await start(path.resolve(process.argv[2]), path.basename(path.resolve(process.argv[2]))));
  try {
    for (const t of trees) for (let i = 0; i < 4; i++) await predict(t.url, i % 2 ? phone[i]! : small[i]!); // warm
    for (let r = 0; r < rounds; r++) {
      for (let i = 0; i < small.length; i++) {
        const order = (r + i) % 2 === 0 ? trees : [...trees].reverse();
        for (const t of order) t.small.push(await sleep(gapMs).then(() => predict(t.url, small[i]!)));
        for (const t of order) t.phone.push(await sleep(gapMs).then(() => predict(t.url, phone[i]!)));
      }
    }
  } finally {
    for (const t of trees) {
      await stopChild(t.child);
      rmSync(t.dataDir, { recursive: true, force: true });
    }
  }
  const stageNames = [...new Set(trees.flatMap((t) => [...t.small, ...t.phone].flatMap((s) => Object.keys(s.stages))))];
  const rows = trees.map((t) => ({
    tree: t.label,
    smallP50Ms: Math.round(p50(t.small, (s) => s.ms) * 10) / 10,
    phoneP50Ms: Math.round(p50(t.phone, (s) => s.ms) * 10) / 10,
    ratio: Math.round((p50(t.phone, (s) => s.ms) / p50(t.small, (s) => s.ms)) * 100) / 100,
    stagesP50Ms: Object.fromEntries(stageNames.map((n) => [n, [p50(t.small, (s) => s.stages[n]), p50(t.phone, (s) => s.stages[n])].map((v) => Math.round(v * 100) / 100)])),
  }));
  for (const row of rows) process.stdout.write(`${JSON.stringify(row)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error)?.stack ?? String(error)}\n`);
  process.exit(1);
});
