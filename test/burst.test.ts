// Over capacity, a ready service answers 429, never 503: 10,000 client connections opened at once
// against POST /v2/predict, from a child process (bench/burst.ts) with `ulimit -n` raised, as is the
// service's, beside a busy neighbour (a busy loop at the default priority, as on a shared host). Every
// connection gets 200 or 429 (with Retry-After), every answer, the front's own included, is counted in
// the request metrics, and the front's places in the service stay bounded.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { BurstResult } from '../bench/burst';
import { startBusyNeighbour } from './helpers/busy-neighbour';
import { parseMetrics, total } from './helpers/metrics';
import { repoRoot } from './helpers/paths';
import { startServer, TEST_KEY } from './helpers/server';
import { waitFor } from './helpers/wait';

const CONNECTIONS = 10_000;
/** Descriptors each side needs: the connections, and slack. */
const NEEDED = CONNECTIONS + 2_000;
const RAISE = `ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"`;

function openFileLimit(): number {
  const raw = execFileSync('bash', ['-c', `${RAISE}; ulimit -n`], { encoding: 'utf8' }).trim();
  return raw === 'unlimited' ? Infinity : Number(raw);
}

test(`${CONNECTIONS} connections at once against /v2/predict beside a busy neighbour: only 200 and 429, all counted`, async (t) => {
  const limit = openFileLimit();
  if (limit < NEEDED) return t.skip(`ulimit -n can only be raised to ${limit} here; the burst needs ${NEEDED}`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cc-burst-'));
  const launcher = path.join(dir, 'service.sh');
  writeFileSync(launcher, `#!/bin/bash\n${RAISE}\nexec "${process.execPath}" "${path.join(repoRoot, 'dist/src/main.js')}"\n`, { mode: 0o755 });
  const server = await startServer({ CATCOMFORT_DATA_DIR: dir }, { command: launcher });
  t.after(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const neighbour = await startBusyNeighbour();
  t.after(() => neighbour.stop());
  const script = `${RAISE}; exec "${process.execPath}" "${path.join(repoRoot, 'dist/bench/burst.js')}" "$@"`;
  // Asynchronously: the service's log pipe must keep draining into this process meanwhile.
  const { stdout: out } = await promisify(execFile)('bash', ['-c', script, 'burst', `${server.url}/v2/predict`, TEST_KEY, String(CONNECTIONS)], { encoding: 'utf8', timeout: 240_000 });
  await neighbour.stop();
  const result = JSON.parse(out) as BurstResult;
  assert.equal(result.unanswered, 0, out);
  assert.deepEqual(Object.keys(result.statuses).filter((s) => s !== '200' && s !== '429'), [], out);
  assert.ok((result.statuses['200'] ?? 0) > 0, out);
  assert.equal(result.retryAfterMissing, 0, out);

  const counted = await waitFor('every answer in the request metrics', async () => {
    const scrape = await (await fetch(`${server.url}/metrics`, { headers: { 'api-key': TEST_KEY } })).text();
    const samples = parseMetrics(scrape);
    const byStatus = (status: string) => total(samples, 'catcomfort_http_requests_total', { route: '/v2/predict', status });
    const upstream = (state: string) => total(samples, 'catcomfort_front_upstream', { state });
    return byStatus('200') + byStatus('429') === CONNECTIONS && { ok: byStatus('200'), overloaded: byStatus('429'), open: upstream('open'), waiting: upstream('waiting') };
  });
  assert.deepEqual({ ok: counted.ok, overloaded: counted.overloaded }, { ok: result.statuses['200'], overloaded: result.statuses['429'] });
  assert.equal(counted.waiting, 0, 'nothing waits for a place afterwards');
  assert.ok(counted.open >= 1 && counted.open <= 256, `places in use stay within the limit: ${counted.open}`);
});
