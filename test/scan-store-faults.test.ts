// The scan store failing under traffic, with real parts: PostgreSQL stopped and started again under
// a stream of submits and predicts (503 store_unavailable with Retry-After, never 500; predicts
// unharmed; every 202 settles; a calm worker; /readyz and the metrics say it), SQLite out of pages
// (recovers without a restart, its WAL truncated), and Idempotency-Key across a dropped connection
// and past its 24 hours.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { IDEMPOTENCY_WINDOW_MS } from '../src/store/scans';
import { openStore, SQLITE_FILE, StoreUnavailableError, type NewScan, type Store } from '../src/store';
import { BACKOFF, backoffMs } from '../src/scan/backoff';
import { parseMetrics, total } from './helpers/metrics';
import { postJson, request } from './helpers/http';
import { photo } from './helpers/paths';
import { startTestPostgres, type TestPostgres } from './helpers/postgres';
import { cli, createCredential, scanHeaders, storeEnv, waitForScan, type Credential } from './helpers/scan';
import { startReceiver } from './helpers/webhook-receiver';
import { startServer, type TestServer } from './helpers/server';
import { waitFor } from './helpers/wait';

const NO_CAT = readFileSync(photo('111_skimage_coffee.png')).toString('base64');
const CAT = readFileSync(photo('000_skimage_chelsea.png')).toString('base64');

test('backoff: doubling from 100 ms, capped at 5 s, each wait drawn in its upper half', () => {
  assert.equal(backoffMs(1, () => 0), BACKOFF.firstMs / 2);
  assert.equal(backoffMs(1, () => 1), BACKOFF.firstMs);
  assert.equal(backoffMs(3, () => 1), 4 * BACKOFF.firstMs);
  assert.equal(backoffMs(50, () => 1), BACKOFF.maxMs);
  assert.equal(backoffMs(50, () => 0), BACKOFF.maxMs / 2);
});

describe('PostgreSQL stopped and started under traffic', () => {
  let postgres: TestPostgres | null = null;
  let skip = '';
  before(async () => {
    const probe = await startTestPostgres();
    if (probe.pg?.outage) postgres = probe.pg;
    else skip = probe.pg ? 'an external PostgreSQL (CATCOMFORT_TEST_DATABASE_URL) cannot be stopped by the test' : probe.reason;
  });
  after(() => postgres?.stop());

  test('submits get 202 or 503 with Retry-After, predicts 200, every 202 settles, the worker stays calm', async (t) => {
    if (!postgres) return t.skip(skip);
    const env = storeEnv(mkdtempSync(path.join(os.tmpdir(), 'cc-pgdown-')), await postgres.createDatabase());
    const server: TestServer = await startServer({ ...env, CATCOMFORT_SCAN_WORKERS: '2' });
    try {
      const partner: Credential = createCredential(env, 'partner');
      const submits: Array<{ status: number; retryAfter: string | null; code?: string; scanId?: string }> = [];
      const predicts: number[] = [];
      let streaming = true;
      const stream = (async () => {
        for (let i = 0; streaming; i++) {
          const [s, p] = await Promise.all([
            postJson(`${server.url}/scan`, { image: NO_CAT, metadata: { petId: 'outage' } }, { ...scanHeaders(partner), 'Idempotency-Key': `outage-${i}` }, null),
            postJson(`${server.url}/v2/predict`, { image: CAT }),
          ]);
          submits.push({ status: s.status, retryAfter: s.headers.get('retry-after'), code: s.body?.error?.code, scanId: s.body?.scanId });
          predicts.push(p.status);
        }
      })();
      const count = (status: number) => submits.filter((s) => s.status === status).length;
      const readyz = async () => (await request(`${server.url}/readyz`, { key: null })).body.scans as string;
      const storeUp = async () => total(parseMetrics((await request(`${server.url}/metrics`)).text), 'catcomfort_scan_store_up', {});

      await waitFor('three accepted submits', () => count(202) >= 3);
      const downAt = performance.now();
      postgres.outage!.serverDown();
      const accepted = count(202);
      await waitFor('twenty submits answered 503 during the outage', () => count(503) >= 20);
      const down = await request(`${server.url}/readyz`, { key: null });
      assert.equal(down.status, 200, 'predict still works: the pod stays in the load balancer');
      assert.equal(down.body.scans, 'unavailable');
      assert.equal(await storeUp(), 0);
      const get = await request(`${server.url}/scan/${submits.find((s) => s.scanId)!.scanId}`, { headers: scanHeaders(partner), key: null });
      assert.equal(get.status, 503);
      assert.equal(get.body.error.code, 'store_unavailable');

      postgres.outage!.serverUp();
      const upAt = performance.now();
      await waitFor('a submit accepted again after the restart', () => count(202) > accepted);
      const recoveredAt = performance.now();
      await waitFor('/readyz to show the store back', async () => (await readyz()) === 'ok');
      streaming = false;
      await stream;
      assert.equal(await storeUp(), 1);

      assert.deepEqual([...new Set(submits.map((s) => s.status))].sort(), [202, 503]);
      for (const s of submits.filter((x) => x.status === 503)) assert.deepEqual([s.code, s.retryAfter], ['store_unavailable', '5']);
      assert.ok(predicts.every((status) => status === 200), `predicts: ${[...new Set(predicts)].join(', ')}`);
      const ids = submits.filter((s) => s.status === 202).map((s) => s.scanId!);
      for (const id of ids) assert.ok(['COMPLETED', 'FAILED'].includes((await waitForScan(server.url, id, partner)).status));
      const errors = total(parseMetrics((await request(`${server.url}/metrics`)).text), 'catcomfort_scan_store_errors_total', {});
      assert.ok(errors >= 5, `store errors counted: ${errors}`);
      t.diagnostic(
        `outage ${Math.round(upAt - downAt)} ms, first 202 after restart ${Math.round(recoveredAt - upAt)} ms; submits 202/503: ${count(202)}/${count(503)}; ` +
          `predicts ${predicts.length} all 200; ${ids.length} accepted scans settled; store errors counted ${errors}`,
      );
    } finally {
      await server.stop();
    }
    const lines = server.output().split('\n');
    const noisy = lines.filter((l) => /"level":"(warn|error)"/.test(l) || /"level":(40|50)/.test(l));
    assert.equal(lines.filter((l) => l.includes('scan claim failed')).length, 0);
    assert.ok(lines.some((l) => l.includes('scan store unavailable')));
    assert.ok(lines.some((l) => l.includes('scan store available again')));
    assert.ok(noisy.length <= 12, `background warnings and errors bounded, got ${noisy.length}:\n${noisy.join('\n')}`);
    t.diagnostic(`warning and error lines in the service log: ${noisy.length}`);
  });

  test('a webhook whose outcome could not be recorded (store stopped mid-attempt) is sent again, with its webhook-id, once the store is back', async (t) => {
    if (!postgres) return t.skip(skip);
    const hooks = await startReceiver((i) => (i === 0 ? 'hold' : 204));
    const env = { ...storeEnv(mkdtempSync(path.join(os.tmpdir(), 'cc-pgdown-hooks-')), await postgres.createDatabase()), CATCOMFORT_FETCH_ALLOW_PRIVATE: 'true' };
    const server: TestServer = await startServer({ ...env, CATCOMFORT_WEBHOOK_TIMEOUT_MS: '2000', CATCOMFORT_WEBHOOK_RETRY_SCHEDULE: '100ms' });
    try {
      const out = cli(env, 'credentials', 'create', '--name', 'hooked', '--webhook-url', `${hooks.url}/`);
      const partner: Credential = { keyId: /key id: (\S+)/.exec(out)![1]!, secret: /^secret: (\S+)/m.exec(out)![1]! };
      const submitted = await postJson(`${server.url}/scan`, { image: CAT }, scanHeaders(partner), null);
      assert.equal(submitted.status, 202);
      await waitFor('the first attempt held by the receiver', () => hooks.held() === 1);
      postgres.outage!.serverDown();
      hooks.release(204); // acknowledged, but the instance cannot record it
      await waitFor('the service finding the store down', async () => (await request(`${server.url}/readyz`, { key: null })).body.scans === 'unavailable');
      postgres.outage!.serverUp();
      const scan = await waitFor('the delivery recorded', async () => {
        const res = await request(`${server.url}/scan/${submitted.body.scanId}`, { headers: scanHeaders(partner), key: null });
        return res.status === 200 && res.body.webhook?.state === 'delivered' && res.body;
      });
      assert.ok(hooks.received.length >= 2, 'sent again after its lease');
      assert.deepEqual([...new Set(hooks.received.map((r) => r.headers['webhook-id']))], [scan.webhook.webhookId]);
      const delivered = scan.logs.find((l: any) => l.event === 'webhook_delivered');
      assert.ok(delivered, `the delivered state comes with its log line: ${JSON.stringify(scan.logs)}`);
      assert.match(delivered.message, /the previous one ended without an outcome/);
    } finally {
      await server.stop();
      await hooks.close();
    }
    assert.ok(!server.output().split('\n').some((l) => l.includes('"level":"error"')), 'no error lines: a store outage is not a bug');
  });
});

describe('SQLite out of space', () => {
  let store: Store;
  let dir: string;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'cc-full-'));
    store = await openStore({ dataDir: dir });
  });
  after(() => store.close());

  const scan = (image: Buffer, key: string | null = null, hash = 'h'): NewScan => ({
    ownerId: 'owner-1',
    source: 'base64',
    image,
    imageUrl: null,
    callbackUrl: null,
    metadata: {},
    idempotencyKey: key,
    requestHash: hash,
  });

  test('a write that finds no space is StoreUnavailableError; reads go on; once space is back the store recovers by itself, its WAL truncated', async () => {
    const pages = (await store.db.query<{ page_count: number }>('PRAGMA page_count'))[0]!.page_count;
    await store.db.query(`PRAGMA max_page_count = ${pages + 40}`);
    const image = Buffer.alloc(64 * 1024, 7);
    const first = await store.scans.create(scan(image));
    assert.ok('scan' in first);
    let failure: unknown = null;
    for (let i = 0; i < 50 && failure === null; i++) await store.scans.create(scan(image)).catch((error: unknown) => (failure = error));
    assert.ok(failure instanceof StoreUnavailableError, String(failure));
    assert.match(String((failure.cause as { code?: string }).code), /^SQLITE_FULL/);
    assert.equal((await store.scans.get('owner-1', first.scan.id))?.id, first.scan.id, 'reads go on');
    const wal = path.join(dir, `${SQLITE_FILE}-wal`);
    const walWhenFull = statSync(wal).size;

    await store.db.query('PRAGMA max_page_count = 1073741823');
    const after = await store.scans.create(scan(image));
    assert.ok('scan' in after && after.created, 'written without a restart');
    assert.ok(statSync(wal).size < walWhenFull, `the WAL was truncated before the write (${statSync(wal).size} < ${walWhenFull})`);
  });

  test('an Idempotency-Key is remembered for 24 hours, then free again', async () => {
    const image = Buffer.from('x');
    const first = await store.scans.create(scan(image, 'day-key', 'body-1'));
    assert.ok('scan' in first && first.created);
    assert.deepEqual(await store.scans.create(scan(image, 'day-key', 'body-2')), { conflict: true });
    await store.db.run('UPDATE scans SET created_at = created_at - $1 WHERE id = $2', [IDEMPOTENCY_WINDOW_MS + 1000, first.scan.id]);
    const later = await store.scans.create(scan(image, 'day-key', 'body-2'));
    assert.ok('scan' in later && later.created && later.scan.id !== first.scan.id);
    assert.ok(await store.scans.get('owner-1', first.scan.id), 'the old scan stays');
  });
});

describe('Idempotency-Key over HTTP', () => {
  let server: TestServer;
  let partner: Credential;
  let other: Credential;
  before(async () => {
    const env = storeEnv(mkdtempSync(path.join(os.tmpdir(), 'cc-idem-')), null);
    server = await startServer(env);
    partner = createCredential(env, 'partner');
    other = createCredential(env, 'other');
  });
  after(() => server.stop());

  test('a retry after a dropped connection finds the one scan the first try may have made, never a second', async () => {
    const body = JSON.stringify({ image: NO_CAT, metadata: { petId: 'dropped' } });
    const head = [
      'POST /scan HTTP/1.1',
      `Host: 127.0.0.1:${server.port}`,
      'Content-Type: application/json',
      `Content-Length: ${Buffer.byteLength(body)}`,
      `api-key: ${partner.keyId}`,
      `api-secret: ${partner.secret}`,
      'Idempotency-Key: dropped-1',
    ].join('\r\n');
    await new Promise<void>((resolve, reject) => {
      const socket = net.connect(server.port, '127.0.0.1', () => socket.end(`${head}\r\n\r\n${body}`, () => socket.destroy()));
      socket.on('close', () => resolve());
      socket.on('error', reject);
    });
    const retry = await postJson(`${server.url}/scan`, JSON.parse(body), { ...scanHeaders(partner), 'Idempotency-Key': 'dropped-1' }, null);
    assert.equal(retry.status, 202, retry.text);
    const list = await request(`${server.url}/scan?petId=dropped`, { headers: scanHeaders(partner), key: null });
    assert.deepEqual(list.body.items.map((s: { scanId: string }) => s.scanId), [retry.body.scanId]);
    assert.equal((await waitForScan(server.url, retry.body.scanId, partner)).status, 'COMPLETED');
  });

  test('the same key from two credentials names two scans', async () => {
    const headers = (c: Credential) => ({ ...scanHeaders(c), 'Idempotency-Key': 'shared' });
    const a = await postJson(`${server.url}/scan`, { image: NO_CAT }, headers(partner), null);
    const b = await postJson(`${server.url}/scan`, { image: NO_CAT }, headers(other), null);
    assert.deepEqual([a.status, b.status], [202, 202]);
    assert.equal(b.headers.get('idempotent-replayed'), null);
    assert.notEqual(a.body.scanId, b.body.scanId);
  });
});
