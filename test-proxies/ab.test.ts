// ApacheBench (an HTTP/1.0 client, one connection per request) against the service directly and
// through nginx with a bare proxy_pass: GET /healthz (1000 requests, 32 at a time) and POST
// /v2/predict with a small cat photo (1000 requests, 32 at a time). Every request must complete
// with a 2xx answer and none may fail.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { photo } from '../test/helpers/paths';
import { startServer, TEST_KEY, type TestServer } from '../test/helpers/server';
import { findAb, runAb, type AbReport } from './helpers/ab';
import { http10Exchange } from './helpers/client';
import { findNginx, startNginx, type TestNginx } from './helpers/nginx';

const SMALL_CAT = '018_oxford_Abyssinian_13.jpg'; // 16 KB
const HEALTH = { n: 1000, c: 32 };
const PREDICT = { n: 1000, c: 32 };

/** ab's counts are all clean; otherwise the message has ab's report and one answer to the same request, sent by hand. */
async function assertClean(report: AbReport, n: number, sample: () => Promise<string>): Promise<void> {
  const clean = report.complete === n && report.failed === 0 && report.non2xx === null && report.exitCode === 0;
  const context = `${report.command} (exit ${report.exitCode}):\n${report.output.slice(-3000)}${clean ? '' : `\n--- one answer to the same HTTP/1.0 request ---\n${await sample()}`}`;
  assert.equal(report.complete, n, `Complete requests: ${context}`);
  assert.equal(report.failed, 0, `Failed requests: ${context}`);
  assert.equal(report.non2xx, null, `Non-2xx responses: ${context}`);
  assert.equal(report.exitCode, 0, context);
}

describe('ab (HTTP/1.0) load', () => {
  const abProbe = findAb();
  const nginxProbe = findNginx();
  let server: TestServer | undefined;
  let nginx: TestNginx | undefined;
  let dir: string | undefined;
  let body: string;

  before(
    async () => {
      if (abProbe.ab === null) return;
      dir = mkdtempSync(path.join(os.tmpdir(), 'cc-ab-'));
      body = path.join(dir, 'predict.json');
      writeFileSync(body, JSON.stringify({ image: readFileSync(photo(SMALL_CAT)).toString('base64') }));
      server = await startServer();
      if (nginxProbe.nginx !== null) nginx = await startNginx(nginxProbe.nginx, 'http10', server.port);
    },
    { timeout: 180_000 },
  );
  after(
    async () => {
      await nginx?.stop();
      await server?.stop();
      if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
    },
    { timeout: 30_000 },
  );

  const targets = [
    { name: 'the service directly', url: () => server!.url, skip: () => (abProbe.ab === null ? abProbe.reason : null) },
    {
      name: 'nginx (default proxy_pass)',
      url: () => nginx!.url,
      skip: () => (abProbe.ab === null ? abProbe.reason : nginxProbe.nginx === null ? nginxProbe.reason : null),
    },
  ];
  for (const target of targets) {
    test(`GET /healthz via ${target.name}: ${HEALTH.n} requests, ${HEALTH.c} at a time, all 2xx`, { timeout: 120_000 }, async (t) => {
      const skip = target.skip();
      if (skip !== null) return t.skip(skip);
      const report = await runAb(abProbe.ab!, ['-n', String(HEALTH.n), '-c', String(HEALTH.c)], `${target.url()}/healthz`, 100_000);
      await assertClean(report, HEALTH.n, () => http10Exchange(target.url(), 'GET', '/healthz'));
    });

    test(`POST /v2/predict via ${target.name}: ${PREDICT.n} requests, ${PREDICT.c} at a time, all 2xx`, { timeout: 300_000 }, async (t) => {
      const skip = target.skip();
      if (skip !== null) return t.skip(skip);
      const args = ['-n', String(PREDICT.n), '-c', String(PREDICT.c), '-p', body, '-T', 'application/json', '-H', `api-key: ${TEST_KEY}`];
      const report = await runAb(abProbe.ab!, args, `${target.url()}/v2/predict`, 280_000);
      const sample = () => http10Exchange(target.url(), 'POST', '/v2/predict', { 'Content-Type': 'application/json', 'api-key': TEST_KEY }, readFileSync(body));
      await assertClean(report, PREDICT.n, sample);
    });
  }
});
