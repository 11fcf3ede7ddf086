// A scan-store outage as an operator would stage it, with the real service on 127.0.0.1: a partner
// submits a scan and a predict every 0.5 s; after 10 s the store goes away for 15 s, then comes back;
// 10 s later the stream stops and every accepted scan is waited for. Prints what the partner saw and
// what the service logged.
//
//   node dist/bench/store-outage.js postgres       # a throwaway cluster, pg_ctl stop -m fast / start
//   node dist/bench/store-outage.js sqlite-full    # SQLite on a 2 MB tmpfs filled up, then freed (root)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { postJson, request } from '../test/helpers/http';
import { photo, repoRoot } from '../test/helpers/paths';
import { startTestPostgres } from '../test/helpers/postgres';
import { createCredential, scanHeaders, storeEnv, waitForScan } from '../test/helpers/scan';
import { startServer } from '../test/helpers/server';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Outage {
  env: Record<string, string>;
  down(): void;
  up(): void;
  close(): Promise<void>;
}

async function postgresOutage(): Promise<Outage> {
  const probe = await startTestPostgres();
  if (!probe.pg?.outage) throw new Error(`needs a throwaway PostgreSQL cluster: ${probe.pg ? 'an external URL is set' : probe.reason}`);
  const pg = probe.pg;
  return { env: storeEnv(mkdtempSync(path.join(os.tmpdir(), 'outage-')), await pg.createDatabase()), down: pg.outage!.serverDown, up: pg.outage!.serverUp, close: () => pg.stop() };
}

function sqliteFullOutage(): Outage {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'outage-tmpfs-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', dir]);
  const filler = path.join(dir, 'filler');
  return {
    env: storeEnv(dir, null),
    down: () => {
      try {
        execFileSync('dd', ['if=/dev/zero', `of=${filler}`, 'bs=64k'], { stdio: 'ignore' });
      } catch {
        // dd stops with "No space left on device": the volume is full, as wanted.
      }
    },
    up: () => rmSync(filler, { force: true }),
    close: async () => {
      execFileSync('umount', [dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function main(): Promise<void> {
  const kind = process.argv[2];
  if (kind !== 'postgres' && kind !== 'sqlite-full') throw new Error('usage: node dist/bench/store-outage.js postgres|sqlite-full');
  const outage = kind === 'postgres' ? await postgresOutage() : sqliteFullOutage();
  const server = await startServer(outage.env);
  const partner = createCredential(outage.env, 'partner');
  // A 4 KB JPEG, so that a 2 MB volume holds a few hundred scans.
  const scanImage = readFileSync(path.join(repoRoot, 'models/example-cat.jpg')).toString('base64');
  const predictImage = readFileSync(photo('000_skimage_chelsea.png')).toString('base64');
  const submits = new Map<string, number>();
  const predicts = new Map<number, number>();
  const accepted: string[] = [];
  let phase = 'before';
  const seen = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  const started = Date.now();
  const ticks: Array<Promise<void>> = [];
  const timer = setInterval(() => {
    const i = ticks.length;
    const label = phase;
    ticks.push(
      (async () => {
        const [s, p] = await Promise.all([
          postJson(`${server.url}/scan`, { image: scanImage, metadata: { petId: 'outage' } }, { ...scanHeaders(partner), 'Idempotency-Key': `tick-${i}` }, null),
          postJson(`${server.url}/v2/predict`, { image: predictImage }),
        ]);
        seen(submits, `${label}: ${s.status}${s.status >= 400 ? ` ${s.body?.error?.code} Retry-After ${s.headers.get('retry-after')}` : ''}`);
        predicts.set(p.status, (predicts.get(p.status) ?? 0) + 1);
        if (s.status === 202) accepted.push(s.body.scanId);
      })(),
    );
  }, 500);
  await sleep(10_000);
  phase = 'during';
  outage.down();
  await sleep(7_500);
  const readyDuring = (await request(`${server.url}/readyz`, { key: null })).text;
  await sleep(7_500);
  outage.up();
  phase = 'after';
  await sleep(10_000);
  clearInterval(timer);
  await Promise.all(ticks);
  const settled = new Map<string, number>();
  for (const id of accepted) {
    const scan = await waitForScan(server.url, id, partner, 60_000).catch(async () => (await request(`${server.url}/scan/${id}`, { headers: scanHeaders(partner), key: null })).body);
    seen(settled, scan.status ?? `unreadable (${scan.error?.code})`);
  }
  const readyAfter = (await request(`${server.url}/readyz`, { key: null })).text;
  await server.stop();
  await outage.close();
  const lines = server.output().split('\n');
  const noisy = lines.filter((l) => /"level":"(warn|error)"/.test(l));
  const report = [
    `store outage (${kind}), ${Math.round((Date.now() - started) / 1000)} s; a submit and a predict every 0.5 s, 15 s outage`,
    `submits: ${[...submits].map(([k, n]) => `${k} ×${n}`).join('; ')}`,
    `predicts: ${[...predicts].map(([k, n]) => `${k} ×${n}`).join('; ')}`,
    `accepted scans: ${accepted.length}; settled: ${[...settled].map(([k, n]) => `${k} ×${n}`).join(', ')}`,
    `/readyz during: ${readyDuring}`,
    `/readyz after: ${readyAfter}`,
    `service warnings and errors: ${noisy.length}`,
    ...noisy.map((l) => `  ${l.slice(0, 300)}`),
  ];
  process.stdout.write(`${report.join('\n')}\n`);
  if (process.env.OUTAGE_REPORT) writeFileSync(process.env.OUTAGE_REPORT, `${report.join('\n')}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`store-outage: ${(error as Error)?.stack ?? String(error)}\n`);
  process.exitCode = 1;
});
