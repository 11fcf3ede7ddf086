// `catcomfort gpu-check` run for real on this CPU-only machine, through bin/catcomfort: it writes an
// answers file, then checks against it, printing the table (sessions per size, states, in-process
// and HTTP load against the service it starts, the batching in effect, a scan backlog drained) and
// the verdict, which here is "no GPU provider active" (exit 1), and writes its JSON. A sweep over a
// tiny grid prints each row and rewrites its JSON while it goes on, then the best and the knee; a
// killed parent leaves no child running; a budget too small ends the configuration running at the
// limit (its row stays) and skips the others with a line. The
// verdict's rules, the knob retries, the sweep's order and its best and knee choice, and the
// streaming of rows are checked on made-up reports.
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { knobsToTry, problems } from '../src/cli/gpu-check';
import type { ChildReport } from '../src/cli/gpu-check/report';
import { Rows } from '../src/cli/gpu-check/rows';
import { best, knee, settingLines, sweepOrder } from '../src/cli/gpu-check/sweep';
import { photo, repoRoot } from './helpers/paths';
import { waitFor } from './helpers/wait';

const bin = path.join(repoRoot, 'bin/catcomfort');

function catcomfort(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    execFile(bin, args, { env: { ...process.env, ...env }, timeout: 240_000 }, (error, stdout) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout });
    });
  });
}

/** A temporary folder with three photos and a data folder. */
function workspace(): { dir: string; photos: string; data: Record<string, string> } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cc-gpu-check-'));
  const photos = path.join(dir, 'photos');
  mkdirSync(photos);
  for (const name of ['000_skimage_chelsea.png', '070_darknet_dog.jpg', '111_skimage_coffee.png']) copyFileSync(photo(name), path.join(photos, name));
  return { dir, photos, data: { CATCOMFORT_DATA_DIR: path.join(dir, 'data') } };
}

test('gpu-check on CPU: answers written, then compared; the table (batching, scan drain) and verdict printed; JSON written', async () => {
  const { dir, photos, data } = workspace();
  const answers = path.join(dir, 'answers.json');
  const written = await catcomfort(['gpu-check', '--photos', photos, '--write-answers', answers], { ...data, CATCOMFORT_PRECISION: 'fp32' });
  assert.equal(written.code, 0, written.stdout);
  assert.deepEqual(JSON.parse(readFileSync(answers, 'utf8')), { '000_skimage_chelsea.png': 'detected', '070_darknet_dog.jpg': 'not_detected', '111_skimage_coffee.png': 'not_detected' });

  const json = path.join(dir, 'check.json');
  const env = { ...data, CATCOMFORT_BATCH_MAX_SIZE: '3', CATCOMFORT_BATCH_IN_FLIGHT: '2', CATCOMFORT_POOL_THREADS: '2' };
  const checked = await catcomfort(['gpu-check', '--photos', photos, '--answers', answers, '--seconds', '1', '--scans', '12', '--no-knobs', '--json', json], env);
  assert.equal(checked.code, 1, 'not healthy: no GPU here');
  assert.match(checked.stdout, /knob retries: off \(--no-knobs\)/);
  assert.match(checked.stdout, /^\| as configured \| cpu \| 3 x 2 x 2 \| \d+\.\d\dx \| \d+ \| 3\/3 \|( [\d.]+ \|){9} – \| – \| [\d.]+ \| [\d.]+ \| no GPU provider active[^|]* \|$/m);
  assert.match(checked.stdout, /verdict: NOT healthy as configured: no GPU provider active/);
  assert.doesNotMatch(checked.stdout, /session batch 1 \|/, 'no GPU knobs without a GPU');
  const report = JSON.parse(readFileSync(json, 'utf8'));
  assert.equal(report.healthy, false);
  assert.equal(report.finished, true);
  const configured = report.reports[0];
  assert.deepEqual(configured.batching, { maxBatchSize: 3, maxInFlight: 2, poolThreads: 2 });
  assert.deepEqual(configured.sessions.map((s: { stage: string; batch: number }) => `${s.stage} ${s.batch}`), ['detector 1', 'detector 2', 'detector 4', 'detector 8', 'classifier 1', 'classifier 2', 'classifier 4', 'classifier 8']);
  assert.deepEqual(configured.load.map((l: { clients: number; failed: number }) => [l.clients, l.failed]), [[1, 0], [32, 0], [128, 0], [256, 0]]);
  assert.deepEqual(configured.http.map((l: { clients: number; failed: number }) => [l.clients, l.failed]), [[1, 0], [32, 0], [128, 0], [256, 0]], 'the service over HTTP, every answer 200');
  assert.ok(configured.http.every((l: { reqPerS: number }) => l.reqPerS > 0));
  assert.ok(configured.readyMs > 0, 'the service started for HTTP was timed to ready');
  assert.equal(configured.scans.scans, 12);
  assert.equal(configured.scans.completed, 12, 'every scan of the backlog drained by the service');
  assert.ok(configured.scans.drainMs > 0 && configured.scans.imagesPerS > 0, JSON.stringify(configured.scans));
  assert.deepEqual(Object.keys(configured.timings).sort(), ['http', 'load', 'photos', 'scans', 'sessions', 'start']);

  const usage = await catcomfort(['gpu-check']);
  assert.equal(usage.code, 2);
  assert.equal((await catcomfort(['gpu-check', '--photos', photos, '--batch', '4'])).code, 2, '--batch without --sweep');
});

test('gpu-check --sweep on CPU: each row printed and in the JSON as it ends; the best again with the scan drain; the best and knee lines', async () => {
  const { dir, photos, data } = workspace();
  const json = path.join(dir, 'sweep.json');
  const parent = spawn(bin, ['gpu-check', '--photos', photos, '--seconds', '1', '--sweep', '--batch', '2', '--in-flight', '1', '--pool', '1', '--scans', '8', '--json', json], {
    env: { ...process.env, ...data },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  parent.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => parent.once('exit', resolve));
  await waitFor('the first row', () => /^\| as configured \| cpu \|.*\|$/m.test(stdout), { timeoutMs: 180_000 });
  assert.equal(parent.exitCode, null, 'printed while the sweep goes on');
  const early = JSON.parse(readFileSync(json, 'utf8'));
  assert.equal(early.finished, false);
  assert.deepEqual(early.reports.map((r: ChildReport) => r.name), ['as configured'], 'the JSON holds the finished row before the run ends');
  assert.equal(early.reports[0].load.length, 4);

  assert.equal(await exited, 1, stdout);
  const names = [...stdout.matchAll(/^\| ([^|]+?) \| cpu \|/gm)].map((m) => m[1]);
  assert.equal(names.length, 3, stdout);
  assert.deepEqual(names.slice(0, 2), ['as configured', 'batch 2 x in-flight 1 x pool 1']);
  assert.match(names[2]!, /^.+, again with scans$/);
  assert.equal(stdout.match(/^\| configuration \|/gm)?.length, 1, 'one header');
  assert.match(stdout, /^Where the time goes[^\n]*\n\n\| stages of \| load \| clients \| read \| queue \| decode \| detect \| crop \| classify \| loop \| convert \|/m, 'the stage table after the rows');
  assert.match(stdout, /^\| as configured \| in-process \| 1 \| – \| \d+\.\d\d \|/m, 'in-process levels have no read stage');
  assert.match(stdout, /^# best: [\d.]+ req\/s in-process at 256 clients, p99 \d+ ms \(.+\)\nexport CATCOMFORT_BATCH_MAX_SIZE=\d+ CATCOMFORT_BATCH_IN_FLIGHT=\d+ CATCOMFORT_POOL_THREADS=\d+$/m);
  assert.match(stdout, /^# knee \(fewest images in flight within 5 % of the best\): .+\nexport CATCOMFORT_BATCH_MAX_SIZE=\d+ /m);
  assert.match(stdout, /^CUDA graphs: not swept/m);
  const report = JSON.parse(readFileSync(json, 'utf8'));
  assert.equal(report.finished, true);
  assert.equal(report.reports.length, 3);
  const [configured, point, again] = report.reports;
  assert.deepEqual(point.batching, { maxBatchSize: 2, maxInFlight: 1, poolThreads: 1 });
  assert.deepEqual(point.env, { CATCOMFORT_BATCH_MAX_SIZE: '2', CATCOMFORT_BATCH_IN_FLIGHT: '1', CATCOMFORT_POOL_THREADS: '1' });
  assert.deepEqual([point.sessions, point.photos, point.http], [[], null, []], 'a sweep child skips the per-shape sessions, the photos and HTTP');
  assert.equal(configured.sessions.length, 8, 'the first configuration measures the sessions');
  assert.equal(configured.scans, null, 'only the best drains scans');
  assert.equal(again.scans.completed, 8);
  assert.equal(again.load.length, 4, 'the best measured again beside its drain');
  assert.equal(report.best, report.reports.find((r: ChildReport) => `${r.name}, again with scans` === again.name).name);
});

test('gpu-check --simulate: the whole sweep on a simulated device, its busy share in the GPU column, 16 cores played', async () => {
  const { dir, photos, data } = workspace();
  const json = path.join(dir, 'simulated.json');
  const run = await catcomfort(['gpu-check', '--photos', photos, '--seconds', '1', '--sweep', '--batch', '4,16', '--in-flight', '4', '--pool', '16', '--scans', '16', '--simulate', 'h200', '--simulate-decode', '--cores', '16', '--json', json], data);
  assert.equal(run.code, 1, run.stdout);
  const rows = [...run.stdout.matchAll(/^\| ([^|]+?) \| simulated h200 \| (\d+) x (\d+) x (\d+) \|.*\| (\d+) \| 0 \| [^|]* \| [^|]* \| ([^|]+) \|$/gm)];
  assert.equal(rows.length, 4, run.stdout);
  assert.deepEqual(rows.slice(0, 3).map((m) => m[1]), ['as configured', 'batch 16 x in-flight 4 x pool 16', 'batch 4 x in-flight 4 x pool 16'], run.stdout);
  assert.match(rows[3]![1]!, /, again with scans$/);
  // As configured: the GPU rule for 16 cores (32 x 4, pool 16), the device busy, and the verdict says it was simulated.
  assert.deepEqual(rows[0]!.slice(2, 5), ['32', '4', '16']);
  for (const m of rows) assert.ok(Number(m[5]) > 0 && Number(m[5]) <= 100, m[0]);
  assert.match(rows[0]![6]!, /simulated h200 device: no GPU measured/);
  assert.match(run.stdout, /^# best: [\d.]+ req\/s in-process at 256 clients/m);
  const report = JSON.parse(readFileSync(json, 'utf8'));
  assert.equal(report.reports[0].sessions.length, 8, 'the sessions step ran on the simulated device');
  assert.ok(report.reports[3].scans.completed === 16, 'the scan drain ran against the simulated service');
});

test('gpu-check killed: the child of the configuration running sees its parent gone and ends, leaving nothing running', async () => {
  const { photos, data } = workspace();
  const parent = spawn(bin, ['gpu-check', '--photos', photos, '--seconds', '1', '--sweep', '--batch', '2', '--in-flight', '1', '--pool', '1'], { env: { ...process.env, ...data }, stdio: 'ignore' });
  const exited = new Promise((resolve) => parent.once('exit', resolve));
  const children = () => execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).split('\n').filter((line) => line.includes('--child') && line.includes(photos));
  await waitFor('the first child', () => children().length > 0, { timeoutMs: 60_000 });
  parent.kill('SIGKILL');
  await exited;
  // Well before the child would end by itself (its sessions step alone takes longer here).
  await waitFor('no gpu-check child left', () => children().length === 0, { timeoutMs: 10_000 });
});

test('gpu-check --budget too small: the configuration running is ended at the limit, the others are skipped with a line', async () => {
  const { dir, photos, data } = workspace();
  const json = path.join(dir, 'budget.json');
  const run = await catcomfort(['gpu-check', '--photos', photos, '--sweep', '--batch', '1,2', '--in-flight', '1', '--pool', '1', '--budget', '1', '--json', json], data);
  assert.equal(run.code, 1);
  assert.match(run.stdout, /^\| as configured \| – \| – \|.*\| ended by SIGKILL \(time limit\) \|$/m);
  assert.match(run.stdout, /^skipped: batch 2 x in-flight 1 x pool 1: needs ~\d+ s and ~\d+ s are kept for the scan drain, 0 s of --budget left$/m);
  assert.match(run.stdout, /^skipped: batch 1 x in-flight 1 x pool 1: /m);
  assert.match(run.stdout, /^best: none/m);
  assert.deepEqual(JSON.parse(readFileSync(json, 'utf8')).reports.map((r: ChildReport) => r.name), ['as configured']);
});

const healthy: ChildReport = {
  name: 'as configured',
  env: {},
  providers: ['cuda', 'cpu'],
  batching: { maxBatchSize: 4, maxInFlight: 2, poolThreads: 16 },
  sessions: [{ stage: 'classifier', batch: 2, steadyMs: 1, alternatingMs: 1.2 }],
  photos: { count: 40, maxMs: 30, p50Ms: 15, slowest: 'a.jpg', states: {}, statesEqual: 40, compared: 40 },
  load: [{ clients: 32, reqPerS: 300, p50Ms: 100, p99Ms: 150, failed: 0, gpu: null }],
  http: [{ clients: 32, reqPerS: 290, p50Ms: 105, p99Ms: 160, failed: 0 }],
  readyMs: 9000,
  scans: null,
  timings: {},
};

test('gpu-check verdict: a per-shape stall, a slow photo, differing states, failures, a slow restart and failed scans are problems', () => {
  assert.deepEqual(problems(healthy), []);
  const stalled = { ...healthy, sessions: [{ stage: 'classifier' as const, batch: 2, steadyMs: 1, alternatingMs: 900 }] };
  assert.deepEqual(problems(stalled), ['classifier batch 2: 900.0 ms alternating vs 1.0 ms steady (per-shape stall)']);
  const slow = { ...healthy, photos: { ...healthy.photos!, maxMs: 1300, slowest: '039.jpg', statesEqual: 39 } };
  assert.deepEqual(problems(slow), ['039.jpg took 1300 ms at one client (limit 100)', '1 of 40 states differ from the answers']);
  assert.deepEqual(problems({ ...healthy, error: 'ended by SIGSEGV' }), ['ended by SIGSEGV']);
  assert.deepEqual(problems({ ...healthy, readyMs: 54_000 }), ['restart ready in 54.0 s (limit 20)']);
  assert.deepEqual(problems({ ...healthy, http: [{ clients: 32, reqPerS: 5.3, p50Ms: 5000, p99Ms: 9000, failed: 2 }] }), [
    '2 requests failed under load',
    'HTTP at 32 clients: 5.3 req/s, under 90 % of in-process 300.0',
  ]);
  assert.deepEqual(problems({ ...healthy, scans: { scans: 100, completed: 90, failed: 2, drainMs: 1000, imagesPerS: 92 } }), ['2 of 100 scans FAILED', '92 of 100 scans finished within the time limit']);
});

test('gpu-check knob retries: only with a GPU provider active and a problem, and never with --no-knobs', () => {
  const stalled = { ...healthy, photos: { ...healthy.photos!, maxMs: 900 } };
  assert.deepEqual(
    knobsToTry(stalled, false).map(([name]) => name),
    ['session batch 1', 'cuDNN EXHAUSTIVE', 'cuDNN HEURISTIC', 'cuDNN DEFAULT', 'pinned memory off'],
  );
  assert.deepEqual(knobsToTry(stalled, true), []);
  assert.deepEqual(knobsToTry(healthy, false), []);
  assert.deepEqual(knobsToTry({ ...stalled, providers: ['cpu'] }, false), []);
});

test('gpu-check --sweep order: the most images in flight first, then each time the farthest from those before', () => {
  const order = sweepOrder([4, 8, 16, 32], [2, 4, 8], [8, 16]);
  assert.equal(order.length, 24);
  assert.equal(new Set(order.map((p) => `${p.batch} ${p.inFlight} ${p.pool}`)).size, 24);
  assert.deepEqual(order.slice(0, 2), [
    { batch: 32, inFlight: 8, pool: 16 },
    { batch: 4, inFlight: 2, pool: 8 },
  ]);
  // The first six: both batch extremes at every in-flight value and both pools; by the tenth, every batch size.
  const values = (points: typeof order, key: 'batch' | 'inFlight' | 'pool') => [...new Set(points.map((p) => p[key]))].sort((a, b) => a - b);
  assert.deepEqual(values(order.slice(0, 6), 'batch'), [4, 32]);
  assert.deepEqual(values(order.slice(0, 6), 'inFlight'), [2, 4, 8]);
  assert.deepEqual(values(order.slice(0, 6), 'pool'), [8, 16]);
  assert.deepEqual(values(order.slice(0, 10), 'batch'), [4, 8, 16, 32]);
});

test('gpu-check --sweep choice: best by top-level req/s (p99 within 1 %, failures excluded), knee by fewest images in flight within 5 %', () => {
  const at = (name: string, batch: number, inFlight: number, pool: number, reqPerS: number, p99Ms: number, failed = 0): ChildReport => ({
    ...healthy,
    name,
    batching: { maxBatchSize: batch, maxInFlight: inFlight, poolThreads: pool },
    load: [{ clients: 256, reqPerS, p50Ms: 50, p99Ms, failed, gpu: null }],
    http: [],
  });
  const rows = [
    at('a', 4, 2, 16, 450, 600),
    at('b', 32, 8, 16, 1510, 300),
    at('c', 16, 8, 16, 1500, 200),
    at('d', 16, 4, 16, 1440, 220),
    at('e', 8, 4, 16, 1300, 250),
    at('f', 64, 8, 16, 1600, 150, 3),
    { ...at('g', 4, 2, 8, 2000, 10), error: 'ended by SIGSEGV' },
  ];
  const chosen = best(rows)!;
  assert.equal(chosen.name, 'c', 'b is within 1 % of the top and c has the lower p99; f failed requests, g crashed');
  assert.equal(knee(rows, chosen)!.name, 'd', '64 images in flight at 96 % of the best; e (32) is under 95 %');
  assert.equal(best([at('only', 4, 2, 16, 100, 100, 1)]), undefined);
  assert.equal(settingLines('best', chosen), '# best: 1500.0 req/s in-process at 256 clients, p99 200 ms (c)\nexport CATCOMFORT_BATCH_MAX_SIZE=16 CATCOMFORT_BATCH_IN_FLIGHT=8 CATCOMFORT_POOL_THREADS=16\n');
});

test('gpu-check rows stream: the header once, each row as it comes, the JSON holding every report so far before the row is printed', () => {
  const json = path.join(mkdtempSync(path.join(os.tmpdir(), 'cc-gpu-rows-')), 'rows.json');
  const printed: string[] = [];
  const rows = new Rows((text) => printed.push(text), json, { budgetSeconds: 480 });
  rows.add(healthy);
  assert.equal(printed.length, 1);
  assert.match(printed[0]!, /^\| configuration \|.*\n\|---\|.*\n\| as configured \| cuda,cpu \| 4 x 2 x 16 \| 1\.20x \| 30 \| 40\/40 \| – \| 300\.0 \|/);
  assert.deepEqual(JSON.parse(readFileSync(json, 'utf8')).reports.map((r: ChildReport) => r.name), ['as configured']);
  rows.add({ ...healthy, name: 'second' });
  assert.match(printed[1]!, /^\| second \|[^\n]*\|\n$/);
  const written = JSON.parse(readFileSync(json, 'utf8'));
  assert.deepEqual([written.budgetSeconds, written.finished, written.reports.length], [480, false, 2]);
});
