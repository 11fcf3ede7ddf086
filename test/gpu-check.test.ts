// `catcomfort gpu-check` run for real on this CPU-only machine, through bin/catcomfort: it writes an
// answers file, then checks against it, printing the table (sessions per size, states, in-process
// and HTTP load against the service it starts) and
// the verdict, which here is "no GPU provider active" (exit 1), and writes its JSON. The verdict's
// rules on a stall, a slow photo and differing states are checked on made-up reports.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { problems, type ChildReport } from '../src/cli/gpu-check';
import { photo, repoRoot } from './helpers/paths';

function catcomfort(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    execFile(path.join(repoRoot, 'bin/catcomfort'), args, { env: { ...process.env, ...env }, timeout: 180_000 }, (error, stdout) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout });
    });
  });
}

test('gpu-check on CPU: answers written, then compared; the table and verdict printed; JSON written', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cc-gpu-check-'));
  const photos = path.join(dir, 'photos');
  mkdirSync(photos);
  for (const name of ['000_skimage_chelsea.png', '070_darknet_dog.jpg', '111_skimage_coffee.png']) copyFileSync(photo(name), path.join(photos, name));
  const answers = path.join(dir, 'answers.json');
  const data = { CATCOMFORT_DATA_DIR: path.join(dir, 'data') };
  const written = await catcomfort(['gpu-check', '--photos', photos, '--write-answers', answers, '--seconds', '1'], { ...data, CATCOMFORT_PRECISION: 'fp32' });
  assert.equal(written.code, 0, written.stdout);
  assert.deepEqual(JSON.parse(readFileSync(answers, 'utf8')), { '000_skimage_chelsea.png': 'detected', '070_darknet_dog.jpg': 'not_detected', '111_skimage_coffee.png': 'not_detected' });

  const json = path.join(dir, 'check.json');
  const checked = await catcomfort(['gpu-check', '--photos', photos, '--answers', answers, '--seconds', '1', '--json', json], data);
  assert.equal(checked.code, 1, 'not healthy: no GPU here');
  assert.match(checked.stdout, /^\| as configured \| cpu \| \d+\.\d\dx \| \d+ \| 3\/3 \|( [\d.]+ \|){9} – \| – \| no GPU provider active[^|]* \|$/m);
  assert.match(checked.stdout, /verdict: NOT healthy as configured: no GPU provider active/);
  assert.doesNotMatch(checked.stdout, /session batch 1 \|/, 'no GPU knobs without a GPU');
  const report = JSON.parse(readFileSync(json, 'utf8'));
  assert.equal(report.healthy, false);
  assert.deepEqual(report.reports[0].sessions.map((s: { stage: string; batch: number }) => `${s.stage} ${s.batch}`), ['detector 1', 'detector 2', 'detector 4', 'detector 8', 'classifier 1', 'classifier 2', 'classifier 4', 'classifier 8']);
  assert.deepEqual(report.reports[0].load.map((l: { clients: number; failed: number }) => [l.clients, l.failed]), [[1, 0], [32, 0], [128, 0], [256, 0]]);
  assert.deepEqual(report.reports[0].http.map((l: { clients: number; failed: number }) => [l.clients, l.failed]), [[1, 0], [32, 0], [128, 0], [256, 0]], 'the service over HTTP, every answer 200');
  assert.ok(report.reports[0].http.every((l: { reqPerS: number }) => l.reqPerS > 0));
  assert.ok(report.reports[0].readyMs > 0, 'the service started for HTTP was timed to ready');

  const usage = await catcomfort(['gpu-check']);
  assert.equal(usage.code, 2);
});

test('gpu-check verdict: a per-shape stall, a slow photo, differing states, failures and a slow restart are problems', () => {
  const healthy: ChildReport = {
    name: 'as configured',
    providers: ['cuda', 'cpu'],
    sessions: [{ stage: 'classifier', batch: 2, steadyMs: 1, alternatingMs: 1.2 }],
    photos: { count: 40, maxMs: 30, p50Ms: 15, slowest: 'a.jpg', states: {}, statesEqual: 40, compared: 40 },
    load: [{ clients: 32, reqPerS: 300, p50Ms: 100, p99Ms: 150, failed: 0, gpu: null }],
    http: [{ clients: 32, reqPerS: 290, p50Ms: 105, p99Ms: 160, failed: 0 }],
    readyMs: 9000,
  };
  assert.deepEqual(problems(healthy), []);
  const stalled = { ...healthy, sessions: [{ stage: 'classifier' as const, batch: 2, steadyMs: 1, alternatingMs: 900 }] };
  assert.deepEqual(problems(stalled), ['classifier batch 2: 900.0 ms alternating vs 1.0 ms steady (per-shape stall)']);
  const slow = { ...healthy, photos: { ...healthy.photos, maxMs: 1300, slowest: '039.jpg', statesEqual: 39 } };
  assert.deepEqual(problems(slow), ['039.jpg took 1300 ms at one client (limit 100)', '1 of 40 states differ from the answers']);
  assert.deepEqual(problems({ ...healthy, error: 'ended by SIGSEGV' }), ['ended by SIGSEGV']);
  assert.deepEqual(problems({ ...healthy, readyMs: 54_000 }), ['restart ready in 54.0 s (limit 20)']);
  assert.deepEqual(problems({ ...healthy, http: [{ clients: 32, reqPerS: 5.3, p50Ms: 5000, p99Ms: 9000, failed: 2 }] }), [
    '2 requests failed under load',
    'HTTP at 32 clients: 5.3 req/s, under 90 % of in-process 300.0',
  ]);
});
