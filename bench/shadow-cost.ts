// What a shadow costs serving, side by side in one run: the real service on 127.0.0.1 with bc-v1
// and, beside it, a copy of bc-v1 at another version (the same networks, so a shadow image costs what
// a serving one does: the worst case). Load at c=1 and at saturation (c=32 by default) through the
// bench's load tool with the copy as standby (no shadow) and as shadow, alternated for several rounds
// (ABBA);
// the shadow's comparisons and skips are read from /metrics for each window.
//
//   npm run bench:shadow-cost   (BENCH_SHADOW_ROUNDS, default 2; BENCH_SHADOW_SHARE, the shadow's share
//   of requests, default 1; BENCH_DURATION_S, BENCH_WARMUP_S, BENCH_CONCURRENCY)
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseMetrics, total } from '../test/helpers/metrics';
import { repoRoot } from '../test/helpers/paths';
import { storeEnv } from '../test/helpers/scan';
import { startServer, TEST_KEY } from '../test/helpers/server';
import { waitFor } from '../test/helpers/wait';
import { adminPost, BENCH_ADMIN_KEY } from './admin-client';
import { fmt, installCleanup, log, machineInfo } from './common';
import { runLoad, type LoadLevel } from './load';

const COPY_VERSION = '1.3.1-shadow-copy';

function modelsWithCopy(): string {
  const models = path.join(mkdtempSync(path.join(os.tmpdir(), 'shadow-cost-')), 'models');
  for (const id of ['bc-v1', 'bc-legacy']) cpSync(path.join(repoRoot, 'models', id), path.join(models, id), { recursive: true, dereference: true });
  const copy = path.join(models, `bc-v1@${COPY_VERSION}`);
  cpSync(path.join(models, 'bc-v1'), copy, { recursive: true });
  const manifest = JSON.parse(readFileSync(path.join(copy, 'manifest.json'), 'utf8'));
  writeFileSync(path.join(copy, 'manifest.json'), JSON.stringify({ ...manifest, version: COPY_VERSION }));
  return models;
}

const intList = (value: string | undefined, fallback: number[]) => (value ? value.split(',').map(Number) : fallback);

async function shadowCounts(url: string): Promise<{ compared: number; skipped: number }> {
  const samples = parseMetrics(await (await fetch(`${url}/metrics`, { headers: { 'api-key': TEST_KEY } })).text());
  return {
    compared: total(samples, 'catcomfort_shadow_latency_seconds_count', { version: COPY_VERSION }),
    skipped: total(samples, 'catcomfort_shadow_skipped_total', { version: COPY_VERSION, reason: 'busy' }),
  };
}

interface Row {
  mode: 'standby' | 'shadow';
  round: number;
  level: LoadLevel;
  compared: number;
  skipped: number;
}

async function main(): Promise<void> {
  installCleanup();
  const rounds = Number(process.env.BENCH_SHADOW_ROUNDS ?? 2);
  const share = Number(process.env.BENCH_SHADOW_SHARE ?? 1);
  const concurrency = intList(process.env.BENCH_CONCURRENCY, [1, 32]);
  const durationS = Number(process.env.BENCH_DURATION_S ?? 10);
  const warmupS = Number(process.env.BENCH_WARMUP_S ?? 2);
  const models = modelsWithCopy();
  const server = await startServer({
    ...storeEnv(mkdtempSync(path.join(os.tmpdir(), 'shadow-cost-data-')), null),
    CATCOMFORT_MODELS_DIR: models,
    CATCOMFORT_ADMIN_PORT: '0',
    CATCOMFORT_ADMIN_KEYS: BENCH_ADMIN_KEY,
    CATCOMFORT_SCAN_WORKERS: '0',
  });
  const rows: Row[] = [];
  try {
    const port = await waitFor('the admin listener', () => Number(/"admin_port":(\d+)/.exec(server.output())?.[1]) || null);
    const loaded = await adminPost(port, '/packs/load', { dir: path.join(models, `bc-v1@${COPY_VERSION}`), role: 'standby' });
    if (loaded.status !== 200) throw new Error(`load: ${loaded.text}`);
    for (let round = 1; round <= rounds; round++) {
      // standby first in odd rounds, shadow first in even ones, so a drift of the machine's speed cancels out.
      for (const mode of round % 2 === 1 ? (['standby', 'shadow'] as const) : (['shadow', 'standby'] as const)) {
        const routed = await adminPost(port, '/packs/route', { pack: `bc-v1@${COPY_VERSION}`, role: mode, ...(mode === 'shadow' ? { share } : {}) });
        if (routed.status !== 200) throw new Error(`route ${mode}: ${routed.text}`);
        for (const c of concurrency) {
          const before = await shadowCounts(server.url);
          const [level] = await runLoad({ url: `${server.url}/v2/predict`, apiKey: TEST_KEY, concurrency: [c], durationS, warmupS });
          const after = await shadowCounts(server.url);
          rows.push({ mode, round, level: level!, compared: after.compared - before.compared, skipped: after.skipped - before.skipped });
          log(`round ${round}, ${mode}, c=${c}: ${fmt(level!.rps)} req/s, p50 ${fmt(level!.p50Ms)} ms, p99 ${fmt(level!.p99Ms)} ms; shadow ran ${after.compared - before.compared}, skipped ${after.skipped - before.skipped}`);
        }
      }
    }
  } finally {
    await server.stop();
  }
  const m = machineInfo();
  const lines = [
    `Shadow cost, ${new Date().toISOString().slice(0, 10)}, ${m.cpu} (${m.cores} cores), CPU; bc-v1 serving, a copy of it at ${COPY_VERSION} as standby or shadow (share ${share}), alternated; ${durationS} s per window.`,
    '',
    '| c | round | req/s standby | req/s shadow | ratio | p50 ms standby / shadow | p99 ms standby / shadow | shadow images run / skipped |',
    '|---:|---:|---:|---:|---:|---|---|---|',
  ];
  for (const c of concurrency) {
    for (let round = 1; round <= rounds; round++) {
      const get = (mode: Row['mode']) => rows.find((r) => r.mode === mode && r.round === round && r.level.concurrency === c)!;
      const [a, b] = [get('standby'), get('shadow')];
      lines.push(
        `| ${c} | ${round} | ${fmt(a.level.rps)} | ${fmt(b.level.rps)} | ${(b.level.rps / a.level.rps).toFixed(3)} | ${fmt(a.level.p50Ms)} / ${fmt(b.level.p50Ms)} | ${fmt(a.level.p99Ms)} / ${fmt(b.level.p99Ms)} | ${b.compared} / ${b.skipped} |`,
      );
    }
  }
  for (const c of concurrency) {
    const sum = (mode: Row['mode']) => rows.filter((r) => r.mode === mode && r.level.concurrency === c).reduce((n, r) => n + r.level.rps, 0);
    lines.push(`| ${c} | all | ${fmt(sum('standby') / rounds)} | ${fmt(sum('shadow') / rounds)} | ${(sum('shadow') / sum('standby')).toFixed(3)} | | | |`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

void main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error).stack ?? String(error)}\n`);
  process.exitCode = 1;
});
