// The service behind a real nginx, for one describe block of the proxy tests: before() starts the
// service (CATCOMFORT_TRUSTED_PROXIES=127.0.0.1, a SQLite scan store in a temp folder, 3 failed
// credential checks a minute per address) and nginx in front of it; after() stops both and removes
// the folder. Without nginx every test is skipped with the reason. Also the checks both nginx shapes
// share (health, a prediction, a scan) and the scan calls of a guesser and a partner.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test as nodeTest } from 'node:test';
import { joinBytesElements } from '../../src/oip/bytes-elements';
import { photo } from '../../test/helpers/paths';
import { keyedStream } from '../../test/helpers/stream-client';
import { createCredential, scanHeaders, storeEnv, type Credential } from '../../test/helpers/scan';
import { startServer, TEST_KEY, type TestServer } from '../../test/helpers/server';
import { waitFor } from '../../test/helpers/wait';
import { call, show, type Reply } from './client';
import { findNginx, startNginx, type NginxVariant, type TestNginx } from './nginx';

export const CAT = '000_skimage_chelsea.png';
export const FAILURES_PER_MINUTE = 3;
export const b64 = (file: string) => readFileSync(photo(file)).toString('base64');

export interface Proxied {
  server: TestServer;
  nginx: TestNginx;
  /** The store settings, for the credentials CLI. */
  env: Record<string, string>;
}

export type ProxiedTest = (title: string, fn: (p: Proxied) => Promise<void>, timeoutMs?: number) => void;

/** Registers before/after in the enclosing describe; returns `test`, which is skipped (with the reason) without nginx. */
export function proxiedService(variant: NginxVariant): ProxiedTest {
  let skip: string | null = null;
  let dataDir: string | null = null;
  let proxied: Proxied | null = null;
  let server: TestServer | undefined;
  let nginx: TestNginx | undefined;
  before(
    async () => {
      const probe = findNginx();
      if (probe.nginx === null) {
        skip = probe.reason;
        return;
      }
      dataDir = mkdtempSync(path.join(os.tmpdir(), `cc-proxies-${variant}-`));
      const env = { ...storeEnv(dataDir, null), CATCOMFORT_DATABASE_URL: '' };
      server = await startServer({
        ...env,
        CATCOMFORT_TRUSTED_PROXIES: '127.0.0.1',
        CATCOMFORT_SCAN_AUTH_FAILURES_PER_MINUTE: String(FAILURES_PER_MINUTE),
      });
      nginx = await startNginx(probe.nginx, variant, server.port);
      proxied = { server, nginx, env };
    },
    { timeout: 180_000 },
  );
  after(
    async () => {
      await nginx?.stop();
      await server?.stop();
      if (dataDir !== null) rmSync(dataDir, { recursive: true, force: true });
    },
    { timeout: 30_000 },
  );
  return (title, fn, timeoutMs = 60_000) =>
    nodeTest(title, { timeout: timeoutMs }, async (t) => {
      if (skip !== null) return t.skip(skip);
      assert.ok(proxied, 'the service and nginx did not start (see the before hook)');
      try {
        await fn(proxied);
      } catch (error) {
        // What nginx said helps with a 502 or a refused connection.
        if (error instanceof Error) error.message += `\n--- nginx error log (last 2000 characters) ---\n${proxied.nginx.log().slice(-2000).trim() || '(empty)'}`;
        throw error;
      }
    });
}

/** Health, a prediction and a scan through nginx: the checks both nginx shapes share. */
export function sharedChecks(test: ProxiedTest, label: string): void {
  test('GET /healthz through nginx is 200', async ({ nginx }) => {
    const res = await call(nginx.url, '/healthz', { requestId: `${label}-healthz` });
    assert.equal(res.status, 200, show(res));
    assert.deepEqual(res.body, { status: 'alive' });
  });

  test('POST /v2/predict through nginx (a 240 KB body, buffered to disk by nginx) is 200 with the cat found', async ({ nginx }) => {
    const res = await call(nginx.url, '/v2/predict', { json: { image: b64(CAT) }, headers: { 'api-key': TEST_KEY }, requestId: `${label}-predict` });
    assert.equal(res.status, 200, show(res));
    assert.equal(res.body.detection, 'detected', show(res));
    assert.equal(res.body.model.id, 'bc-v1');
    assert.deepEqual(res.body.image, { width: 451, height: 300 });
    assert.ok(res.body.prediction.score >= 0 && res.body.prediction.score <= 1, show(res));
    assert.equal(res.body.request_id, `${label}-predict`);
    assert.equal(res.headers['x-request-id'], `${label}-predict`);
  });

  test('Open Inference Protocol through nginx: health without a key, and a binary infer (HTTP/1.0 or keepalive upstream) that finds the cat', async ({ nginx }) => {
    const ready = await call(nginx.url, '/v2/health/ready', { requestId: `${label}-oip-ready` });
    assert.equal(ready.status, 200, show(ready));
    const image = joinBytesElements([readFileSync(photo(CAT))]);
    const header = Buffer.from(JSON.stringify({ inputs: [{ name: 'image', datatype: 'BYTES', shape: [1], parameters: { binary_data_size: image.length } }] }));
    const res = await call(nginx.url, '/v2/models/bc-v1/infer', {
      raw: Buffer.concat([header, image]),
      headers: { 'api-key': TEST_KEY, 'content-type': 'application/octet-stream', 'inference-header-content-length': String(header.length) },
      requestId: `${label}-oip-infer`,
    });
    assert.equal(res.status, 200, show(res));
    const outputs = Object.fromEntries(res.body.outputs.map((o: { name: string; data: unknown[] }) => [o.name, o.data]));
    assert.deepEqual(outputs.detection, ['detected']);
    assert.deepEqual(outputs.image_size, [451, 300]);
  });

  test('a live stream through nginx (its WebSocket upgrade passed as docs/api-v2.md says): a photo frame is answered with the cat found', async ({ nginx }) => {
    const stream = await keyedStream(nginx.url);
    stream.socket.send(readFileSync(photo(CAT)));
    const [, answer] = await stream.received(2);
    assert.equal(answer!.type, 'result', JSON.stringify(answer));
    assert.equal(answer!.detection, 'detected');
    assert.deepEqual(answer!.image, { width: 451, height: 300 });
    stream.socket.close(1000);
    assert.equal((await stream.closed).code, 1000);
  });

  test('POST /scan through nginx is 202 and the scan completes', async ({ nginx, env }) => {
    const owner = createCredential(env, `${label}-owner`);
    const res = await call(nginx.url, '/scan', { json: { image: b64(CAT) }, headers: scanHeaders(owner) });
    assert.equal(res.status, 202, show(res));
    assert.equal(res.headers.location, `/scan/${res.body.scanId}`);
    const scan = await settledScan(nginx.url, res.body.scanId, owner);
    assert.equal(scan.status, 'COMPLETED', JSON.stringify(scan));
    assert.equal(scan.isCat, true);
  });
}

/** Polls GET /scan/{id} (from `from`) until it is COMPLETED or FAILED; every answer must be 200. */
export function settledScan(url: string, id: string, c: Credential, from?: string): Promise<any> {
  return waitFor(
    `scan ${id} to finish`,
    async () => {
      const res = await call(url, `/scan/${id}`, { headers: scanHeaders(c), ...(from ? { from } : {}) });
      assert.equal(res.status, 200, `GET /scan/${id}: ${show(res)}`);
      return (res.body.status === 'COMPLETED' || res.body.status === 'FAILED') && res.body;
    },
    { timeoutMs: 60_000, intervalMs: 100 },
  );
}

export interface Lockout {
  /** Request ids of every guess, the last one answered 429. */
  requestIds: string[];
  refused: Reply;
}

/**
 * Guesses secrets for `keyId` from `from` until the service answers 429 too_many_failed_attempts,
 * which must come after exactly FAILURES_PER_MINUTE guesses answered 401 (`from` is fresh).
 * `extraHeaders` adds fields to guess number `attempt`. Fails after FAILURES_PER_MINUTE + 3
 * guesses without a 429.
 */
export async function guessUntilLocked(
  url: string,
  keyId: string,
  from: string,
  label: string,
  extraHeaders: (attempt: number) => Record<string, string> = () => ({}),
): Promise<Lockout> {
  const requestIds: string[] = [];
  const answers: string[] = [];
  for (let i = 0; i < FAILURES_PER_MINUTE + 3; i++) {
    const requestId = `${label}-guess-${i}`;
    requestIds.push(requestId);
    const wrong = `ss_${randomBytes(32).toString('base64url')}`;
    const res = await call(url, '/scan', { headers: { ...extraHeaders(i), 'api-key': keyId, 'api-secret': wrong }, from, requestId });
    answers.push(show(res));
    if (res.status === 429) {
      // A fresh address has the whole allowance: exactly that many 401s come first.
      assert.equal(i, FAILURES_PER_MINUTE, `429 after ${i} wrong secrets from ${from}, not ${FAILURES_PER_MINUTE}:\n${answers.join('\n')}`);
      assert.equal(res.body?.error?.code, 'too_many_failed_attempts', show(res));
      assert.ok(Number(res.headers['retry-after']) >= 1, `Retry-After: ${res.headers['retry-after']}`);
      return { requestIds, refused: res };
    }
    assert.equal(res.status, 401, `guess ${i + 1} from ${from}: ${show(res)}`);
  }
  assert.fail(`no 429 after ${answers.length} wrong secrets from ${from}:\n${answers.join('\n')}`);
}

/**
 * A partner's scan calls from `from`: GET /scan (200), POST /scan (202) and GET /scan/{id} until it
 * completes. Returns the request ids of the first two.
 */
export async function partnerCalls(url: string, c: Credential, from: string, label: string): Promise<string[]> {
  const list = await call(url, '/scan', { headers: scanHeaders(c), from, requestId: `${label}-list` });
  assert.equal(list.status, 200, `partner GET /scan from ${from}: ${show(list)}`);
  const submitted = await call(url, '/scan', { json: { image: b64(CAT) }, headers: scanHeaders(c), from, requestId: `${label}-submit` });
  assert.equal(submitted.status, 202, `partner POST /scan from ${from}: ${show(submitted)}`);
  const scan = await settledScan(url, submitted.body.scanId, c, from);
  assert.equal(scan.status, 'COMPLETED', JSON.stringify(scan));
  return [`${label}-list`, `${label}-submit`];
}
