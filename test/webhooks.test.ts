// Webhooks of scans, with real receivers on 127.0.0.1: signatures checked by standardwebhooks' own
// verifier, retries on 500 and on a time-out, callback URLs refused by the SSRF rules at submission
// and at use, a SIGKILL in the middle of deliveries, and two instances sharing one PostgreSQL.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { Webhook } from 'standardwebhooks';
import { fetchPolicy } from '../src/scan/fetch';
import { openStore, SQLITE_FILE } from '../src/store';
import { sqliteMigrations } from '../src/store/migrations';
import { checkCallbackUrl, redactUrl } from '../src/scan/webhooks/callback-url';
import { parseRetrySchedule } from '../src/config/retry-schedule';
import { retryDelayMs } from '../src/scan/webhooks/schedule';
import { postWebhook } from '../src/scan/webhooks/send';
import { webhookHeaders } from '../src/scan/webhooks/signing';
import { postJson } from './helpers/http';
import { parseMetrics, total } from './helpers/metrics';
import { photo } from './helpers/paths';
import { usePostgres } from './helpers/postgres';
import { cli, getScan, scanHeaders, storeEnv, type Credential } from './helpers/scan';
import { startServer, TEST_KEY, type TestServer } from './helpers/server';
import { startReceiver, type Receiver } from './helpers/webhook-receiver';
import { waitFor } from './helpers/wait';

const CAT = b64('000_skimage_chelsea.png');
const NO_CAT = b64('111_skimage_coffee.png');

function b64(file: string): string {
  return readFileSync(photo(file)).toString('base64');
}

interface HookCredential extends Credential {
  webhookSecret: string;
}

function createHookCredential(env: Record<string, string>, name: string, ...extra: string[]): HookCredential {
  const out = cli(env, 'credentials', 'create', '--name', name, ...extra);
  const field = (label: string) => new RegExp(`^${label}: (\\S+)$`, 'm').exec(out)?.[1] ?? assert.fail(`no ${label} in: ${out}`);
  return { keyId: field('key id'), secret: field('secret'), webhookSecret: field('webhook signing secret') };
}

function submit(url: string, c: Credential, body: unknown) {
  return postJson(`${url}/scan`, body, scanHeaders(c), null);
}

async function submitted(url: string, c: Credential, body: unknown): Promise<string> {
  const res = await submit(url, c, body);
  assert.equal(res.status, 202, res.text);
  return res.body.scanId;
}

/** Waits until the scan's webhook is delivered or failed; returns the scan. */
function waitForDelivery(url: string, id: string, c: Credential, state: 'delivered' | 'failed' = 'delivered'): Promise<any> {
  return waitFor(`the webhook of scan ${id} ${state}`, async () => {
    const scan = await getScan(url, id, c);
    return scan.webhook?.state === state && scan;
  });
}

const events = (scan: any, prefix: string) => scan.logs.filter((l: any) => l.event.startsWith(prefix));

/** Settings of a test instance: private addresses allowed (the receivers are on 127.0.0.1), short waits. */
const FAST = {
  CATCOMFORT_FETCH_ALLOW_PRIVATE: 'true',
  CATCOMFORT_WEBHOOK_RETRY_SCHEDULE: '100ms,100ms,100ms',
  CATCOMFORT_WEBHOOK_TIMEOUT_MS: '1000',
};

describe('webhook parts', () => {
  test('retry schedule: parsed from text, each wait within ±20 % of its step, none after the last', () => {
    assert.deepEqual(parseRetrySchedule('5s,30s,2m,10m,1h,6h'), [5000, 30_000, 120_000, 600_000, 3_600_000, 21_600_000]);
    assert.deepEqual(parseRetrySchedule(' 250ms , 1s'), [250, 1000]);
    for (const bad of ['', '5', '5 s', '-1s', '0s', '5d', '1s,,2s', '200h']) assert.throws(() => parseRetrySchedule(bad), RangeError, bad);
    const schedule = [5000, 30_000];
    assert.equal(retryDelayMs(schedule, 1, () => 0), 4000);
    assert.equal(retryDelayMs(schedule, 1, () => 1), 6000);
    assert.equal(retryDelayMs(schedule, 2, () => 0.5), 30_000);
    assert.equal(retryDelayMs(schedule, 3), null);
  });

  test('signatures verify with standardwebhooks, with either secret during a rotation', () => {
    const [oldSecret, newSecret] = ['whsec_' + Buffer.alloc(32, 1).toString('base64'), 'whsec_' + Buffer.alloc(32, 2).toString('base64')];
    const body = JSON.stringify({ type: 'scan.completed', scanId: 'x' });
    const headers = webhookHeaders('msg_1', new Date(), body, [newSecret, oldSecret]);
    assert.equal(headers['webhook-signature']!.split(' ').length, 2);
    for (const secret of [oldSecret, newSecret]) assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
    const other = 'whsec_' + Buffer.alloc(32, 3).toString('base64');
    assert.throws(() => new Webhook(other).verify(body, headers), /signature/i);
    assert.throws(() => new Webhook(newSecret).verify(body.replace('x', 'y'), headers), /signature/i);
  });

  test('a store from before webhooks: migrated in place; its credentials sign nothing until a secret is issued', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cc-hooks-v1-'));
    const old = new Database(path.join(dir, SQLITE_FILE));
    old.exec(sqliteMigrations[0]!.sql);
    old.exec("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL); INSERT INTO schema_migrations VALUES (1, 'v1', '2026-01-01')");
    old.prepare("INSERT INTO scan_credentials (id, key_id, secret_hash, name, created_at) VALUES ('01a20000-0000-7000-8000-000000000001', 'sk_old', 'x', 'old', 0)").run();
    old.close();
    const store = await openStore({ dataDir: dir });
    try {
      const id = '01a20000-0000-7000-8000-000000000001';
      assert.deepEqual(await store.credentials.webhookSecrets(id), []);
      const first = await store.credentials.rotateWebhookSecret('sk_old', 3_600_000);
      assert.equal(first!.previousValidUntil, null);
      assert.deepEqual(await store.credentials.webhookSecrets(id), [first!.webhookSecret]);
      const second = await store.credentials.rotateWebhookSecret(id, 0);
      assert.deepEqual(await store.credentials.webhookSecrets(id), [second!.webhookSecret], 'no overlap: the old secret ends at once');
      assert.equal(await store.credentials.rotateWebhookSecret('sk_missing', 0), null);
    } finally {
      await store.close();
    }
  });

  test('callback URLs: https only, no credentials, public addresses only (literal or resolved)', async () => {
    const strict = fetchPolicy({ resolve: async (host) => [{ address: host === 'public.test' ? '93.184.216.34' : '10.0.0.7', family: 4 }] });
    assert.equal(await checkCallbackUrl('https://public.test/hooks?t=1#frag', strict), 'https://public.test/hooks?t=1');
    const refusals: Array<[string, string]> = [
      ['http://public.test/hooks', 'url_scheme'],
      ['ftp://public.test/', 'url_scheme'],
      ['https://user:pw@public.test/', 'url_credentials'],
      ['https://127.0.0.1/', 'address_blocked'],
      ['https://[::1]/', 'address_blocked'],
      ['https://169.254.169.254/latest/', 'address_blocked'],
      ['https://internal.test/', 'address_blocked'],
      ['not a url', 'url_invalid'],
    ];
    for (const [url, code] of refusals) await assert.rejects(checkCallbackUrl(url, strict), { code }, url);
    const silent = fetchPolicy({ connectTimeoutMs: 50, resolve: () => new Promise(() => undefined) });
    await assert.rejects(checkCallbackUrl('https://slow-dns.test/', silent), { code: 'dns_failed', message: /could not be resolved within 50 ms/ });
    // Where private addresses are allowed (local development), http is too.
    assert.equal(await checkCallbackUrl('http://127.0.0.1:9/x', fetchPolicy({ allowPrivate: true })), 'http://127.0.0.1:9/x');
    assert.equal(redactUrl('https://h.test/p/q?token=secret'), 'https://h.test/p/q?…');
  });

  test('at use the address is checked again: a name that now resolves to a private address is refused, nothing is sent', async () => {
    const receiver = await startReceiver();
    try {
      const port = new URL(receiver.url).port;
      // It was public when given; the resolver now answers with the receiver's loopback address.
      const policy = fetchPolicy({ resolve: async () => [{ address: '127.0.0.1', family: 4 }] });
      await assert.rejects(postWebhook(`http://hooks.test:${port}/`, '{}', {}, policy, 2000), { code: 'address_blocked' });
      await assert.rejects(postWebhook(`${receiver.url}/`, '{}', {}, fetchPolicy(), 2000), { code: 'address_blocked' });
      assert.equal(receiver.received.length, 0);
    } finally {
      await receiver.close();
    }
  });

  test('one attempt: redirects are not followed, a silent receiver times out, the answer is cut to an excerpt', async () => {
    const target = await startReceiver();
    const receiver = await startReceiver((i) => (i === 0 ? 302 : i === 1 ? 'hold' : 500));
    try {
      const open = fetchPolicy({ allowPrivate: true });
      const redirected = await postWebhook(`${receiver.url}/a`, '{}', {}, open, 2000);
      assert.equal(redirected.status, 302);
      await assert.rejects(postWebhook(`${receiver.url}/b`, '{}', {}, open, 300), { code: 'timeout' });
      const failed = await postWebhook(`${receiver.url}/c`, '{}', {}, open, 2000);
      assert.deepEqual(failed, { status: 500, excerpt: 'answer 500' });
      assert.equal(target.received.length, 0);
    } finally {
      await Promise.all([receiver.close(), target.close()]);
    }
  });
});

describe('webhooks through the service (SQLite)', () => {
  let server: TestServer;
  let env: Record<string, string>;
  let dataDir: string;
  const receivers: Receiver[] = [];
  const receiver = async (...args: Parameters<typeof startReceiver>) => {
    const r = await startReceiver(...args);
    receivers.push(r);
    return r;
  };

  before(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'cc-hooks-'));
    env = { ...storeEnv(dataDir, null), ...FAST };
    server = await startServer({ ...env, CATCOMFORT_WEBHOOK_PER_RECEIVER: '1', CATCOMFORT_WEBHOOK_CONCURRENCY: '3' });
  });
  after(async () => {
    await server?.stop();
    await Promise.all(receivers.map((r) => r.close()));
  });

  test('a completed scan: one signed scan.completed whose body is GET /scan/{id} as it finished', async () => {
    const hooks = await receiver();
    const cred = createHookCredential(env, 'signed', '--webhook-url', `${hooks.url}/hooks?token=t0ken`);
    const id = await submitted(server.url, cred, { image: CAT, metadata: { petId: 'p1' } });
    const scan = await waitForDelivery(server.url, id, cred);
    assert.equal(hooks.received.length, 1);
    const [call] = hooks.received;
    assert.match(call!.headers['webhook-id']!, /^msg_[0-9a-f]{32}$/);
    assert.equal(call!.headers['content-type'], 'application/json');
    const verified = new Webhook(cred.webhookSecret).verify(call!.body, call!.headers) as any;
    assert.equal(verified.type, 'scan.completed');
    const { request_id: _get, webhook, ...asGot } = scan;
    const { type: _type, request_id, ...asSent } = verified;
    assert.equal(request_id, call!.headers['webhook-id']);
    assert.deepEqual(asSent, { ...asGot, logs: asGot.logs.filter((l: any) => !l.event.startsWith('webhook_')) });
    assert.equal(asSent.status, 'COMPLETED');
    assert.deepEqual(
      [webhook.webhookId, webhook.event, webhook.state, webhook.attempts, webhook.lastStatus, webhook.url],
      [call!.headers['webhook-id'], 'scan.completed', 'delivered', 1, 204, `${hooks.url}/hooks?…`],
    );
    const [line] = events(scan, 'webhook_delivered');
    assert.match(line.message, /^Attempt 1 \(instance pid \d+\) to http:\/\/127\.0\.0\.1:\d+\/hooks\?…: HTTP 204 in \d+ ms; delivered\.$/);
    assert.doesNotMatch(JSON.stringify(scan.logs), /t0ken|whsec_/);
  });

  test('a failed scan sends scan.failed to the callbackUrl of the submission, over the credential default', async () => {
    const fallback = await receiver();
    const hooks = await receiver();
    const cred = createHookCredential(env, 'failing', '--webhook-url', `${fallback.url}/`);
    const id = await submitted(server.url, cred, { image: Buffer.from('not an image').toString('base64'), callbackUrl: `${hooks.url}/own` });
    const scan = await waitForDelivery(server.url, id, cred);
    assert.equal(scan.status, 'FAILED');
    const body = new Webhook(cred.webhookSecret).verify(hooks.received[0]!.body, hooks.received[0]!.headers) as any;
    assert.deepEqual([body.type, body.status, body.error.code], ['scan.failed', 'FAILED', 'invalid_image']);
    assert.equal(fallback.received.length, 0);
  });

  test('retries on 500 and on a time-out with the same webhook-id, and stop at the 2xx', async () => {
    const hooks = await receiver((i) => ([500, 'hold', 200] as const)[i] ?? 204);
    const cred = createHookCredential(env, 'retried', '--webhook-url', `${hooks.url}/`);
    const id = await submitted(server.url, cred, { image: NO_CAT });
    const scan = await waitForDelivery(server.url, id, cred);
    assert.equal(scan.webhook.attempts, 3);
    const ids = new Set(hooks.received.map((r) => r.headers['webhook-id']));
    assert.deepEqual([...ids], [scan.webhook.webhookId]);
    const lines = scan.logs.filter((l: any) => l.event.startsWith('webhook_')).map((l: any) => `${l.event}: ${l.message}`);
    assert.equal(lines.length, 3, lines.join('\n'));
    assert.match(lines[0], /^webhook_retry: Attempt 1 .*: HTTP 500 after \d+ ms; answer: "answer 500"; next attempt in \d+ ms\.$/);
    assert.match(lines[1], /^webhook_retry: Attempt 2 .*: timeout: no answer from the callback host within 1000 ms after \d+ ms; next attempt/);
    assert.match(lines[2], /^webhook_delivered: Attempt 3 .*: HTTP 200 in \d+ ms; delivered\.$/);
    // A later scan of the same credential is delivered, and the first one got no further attempt.
    const later = await submitted(server.url, cred, { image: NO_CAT });
    await waitForDelivery(server.url, later, cred);
    assert.equal(hooks.received.length, 4);
    assert.equal(hooks.withId(scan.webhook.webhookId).length, 3);
  });

  test('a receiver that never acknowledges: every scheduled attempt, then failed; redeliver sends it again with its webhook-id', async () => {
    const hooks = await receiver((i) => (i < 4 ? 503 : 204));
    const cred = createHookCredential(env, 'down', '--webhook-url', `${hooks.url}/`);
    const id = await submitted(server.url, cred, { image: CAT });
    const failed = await waitForDelivery(server.url, id, cred, 'failed');
    assert.deepEqual([failed.webhook.attempts, failed.webhook.lastStatus, failed.webhook.lastError], [4, 503, 'HTTP 503']);
    assert.match(events(failed, 'webhook_failed')[0].message, /no further attempts, delivery failed\.$/);
    assert.match(cli(env, 'webhooks', 'redeliver', id), /is due again/);
    const again = await waitForDelivery(server.url, id, cred);
    assert.equal(hooks.received.length, 5);
    assert.equal(hooks.withId(again.webhook.webhookId).length, 5);
    assert.equal(events(again, 'webhook_redeliver').length, 1);
  });

  test('a slow receiver holds up only its own deliveries', async () => {
    const slow = await receiver(() => 'hold');
    const fast = await receiver();
    const slowCred = createHookCredential(env, 'slow', '--webhook-url', `${slow.url}/`);
    const fastCred = createHookCredential(env, 'fast', '--webhook-url', `${fast.url}/`);
    for (let i = 0; i < 3; i++) await submitted(server.url, slowCred, { image: NO_CAT });
    await waitFor('an attempt to the slow receiver', () => slow.held() >= 1);
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await submitted(server.url, fastCred, { image: NO_CAT }));
    for (const id of ids) await waitForDelivery(server.url, id, fastCred);
    // An attempt the service gave up on (1 s) was closed before its retry was sent, but both may come
    // in one turn of this process's loop, and this check may run between them: one more full turn
    // first (it failed so with the fast deliveries slowed past 1 s beside three soaks on 2 cores).
    for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
    assert.ok(slow.held() <= 1, 'at most CATCOMFORT_WEBHOOK_PER_RECEIVER attempts to one receiver');
    slow.release();
  });

  test('a rotated signing secret: deliveries carry both signatures during the overlap', async () => {
    const hooks = await receiver();
    const cred = createHookCredential(env, 'rotated', '--webhook-url', `${hooks.url}/`);
    const out = cli(env, 'credentials', 'rotate-webhook-secret', cred.keyId, '--overlap-hours', '1');
    const fresh = /^webhook signing secret: (\S+)$/m.exec(out)![1]!;
    assert.match(out, /previous secret stays valid until/);
    const id = await submitted(server.url, cred, { image: CAT });
    await waitForDelivery(server.url, id, cred);
    const [call] = hooks.received;
    for (const secret of [cred.webhookSecret, fresh]) assert.equal((new Webhook(secret).verify(call!.body, call!.headers) as any).scanId, id);
  });

  test('metrics count deliveries by outcome and show the queue depth', async () => {
    const text = await (await fetch(`${server.url}/metrics`, { headers: { 'api-key': TEST_KEY } })).text();
    const samples = parseMetrics(text);
    assert.ok(total(samples, 'catcomfort_webhook_deliveries_total', { outcome: 'delivered' }) >= 5);
    assert.ok(total(samples, 'catcomfort_webhook_deliveries_total', { outcome: 'retry' }) >= 2);
    assert.ok(total(samples, 'catcomfort_webhook_deliveries_total', { outcome: 'failed' }) >= 1);
    for (const state of ['due', 'scheduled', 'in_flight']) {
      assert.ok(samples.some((s) => s.name === 'catcomfort_webhook_queue_depth' && s.labels.state === state), state);
    }
  });
});

describe('callback URLs refused by the SSRF rules', () => {
  let server: TestServer;
  let env: Record<string, string>;
  let dataDir: string;
  before(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'cc-hooks-ssrf-'));
    env = storeEnv(dataDir, null);
    server = await startServer({ ...env, CATCOMFORT_WEBHOOK_TIMEOUT_MS: '1000' });
  });
  after(() => server?.stop());

  test('at submission: 422 on callbackUrl, nothing stored', async () => {
    const cred = createHookCredential(env, 'ssrf');
    const refusals: Array<[string, RegExp]> = [
      ['http://example.com/hooks', /must use https/],
      ['https://127.0.0.1/hooks', /address that is not allowed/],
      ['https://localhost:8443/', /resolves to an address that is not allowed/],
      ['https://[::ffff:10.0.0.1]/', /address that is not allowed/],
      ['https://169.254.169.254/latest/meta-data/', /address that is not allowed/],
      ['https://user:pw@example.com/', /must not contain credentials/],
      ['javascript:alert(1)', /only http and https callback URLs/i],
      ['', /callback URL is empty/],
    ];
    for (const [url, message] of refusals) {
      const res = await submit(server.url, cred, { image: CAT, callbackUrl: url });
      assert.equal(res.status, 422, `${url}: ${res.text}`);
      assert.equal(res.body.error.details.errors[0].field, 'callbackUrl');
      assert.match(res.body.error.details.errors[0].message, message, url);
    }
    assert.equal((await postJson(`${server.url}/scan`, { image: CAT, callbackUrl: 5 }, scanHeaders(cred), null)).status, 422);
    const list = await (await fetch(`${server.url}/scan`, { headers: scanHeaders(cred) })).json();
    assert.equal(list.items.length, 0);
  });

  test('the CLI refuses the same URLs for a credential default', () => {
    assert.throws(() => cli(env, 'credentials', 'create', '--name', 'x', '--webhook-url', 'https://10.0.0.1/'), /webhook URL refused: the callback URL points to an address that is not allowed/);
    assert.throws(() => cli(env, 'credentials', 'create', '--name', 'x', '--webhook-url', 'http://example.com/'), /must use https/);
  });

  test('at delivery: a URL that reaches a private address now is refused when connecting, and the delivery fails', async () => {
    const hooks = await startReceiver();
    try {
      const cred = createHookCredential(env, 'changed');
      // As if the URL had been public when it was set: the store holds it, the instance checks it on use.
      const db = new Database(path.join(dataDir, SQLITE_FILE));
      db.prepare('UPDATE scan_credentials SET webhook_url = ? WHERE key_id = ?').run(`${hooks.url}/`, cred.keyId);
      db.close();
      const id = await submitted(server.url, cred, { image: CAT });
      const scan = await waitForDelivery(server.url, id, cred, 'failed');
      assert.equal(scan.webhook.attempts, 1, 'a refused address is not retried');
      assert.match(scan.webhook.lastError, /^address_blocked: the callback URL points to an address that is not allowed/);
      assert.equal(hooks.received.length, 0);
    } finally {
      await hooks.close();
    }
  });
});

describe('durability and sharing', () => {
  const postgres = usePostgres();

  test('SIGKILL in the middle of deliveries: after the restart every event arrives; repeats only with the same webhook-id', async () => {
    const env = storeEnv(mkdtempSync(path.join(os.tmpdir(), 'cc-hooks-kill-')), null);
    const settings = { ...env, ...FAST, CATCOMFORT_WEBHOOK_TIMEOUT_MS: '5000', CATCOMFORT_WEBHOOK_CONCURRENCY: '2' };
    const hooks = await startReceiver((i) => (i < 2 ? 'hold' : 204));
    let server = await startServer(settings);
    try {
      const cred = createHookCredential(settings, 'kill', '--webhook-url', `${hooks.url}/`);
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) ids.push(await submitted(server.url, cred, { image: i % 2 ? CAT : NO_CAT }));
      // Two attempts are held by the receiver; the other finished scans wait in the outbox.
      await waitFor('two attempts in flight', () => hooks.held() === 2);
      await waitFor('every scan finished', async () => {
        for (const id of ids) if ((await getScan(server.url, id, cred)).webhook === null) return false;
        return true;
      });
      server.child.kill('SIGKILL');
      await new Promise((r) => server.child.once('exit', r));
      server = await startServer(settings);
      const scans = [];
      for (const id of ids) scans.push(await waitForDelivery(server.url, id, cred));
      const byScan = new Map<string, Set<string>>();
      for (const call of hooks.received) {
        const event = new Webhook(cred.webhookSecret).verify(call.body, call.headers) as any;
        if (!byScan.has(event.scanId)) byScan.set(event.scanId, new Set());
        byScan.get(event.scanId)!.add(call.headers['webhook-id']!);
      }
      assert.deepEqual([...byScan.keys()].sort(), [...ids].sort(), 'every scan event arrived');
      for (const scan of scans) assert.deepEqual([...byScan.get(scan.scanId)!], [scan.webhook.webhookId], 'one webhook-id per scan');
      assert.ok(hooks.received.length >= ids.length + 2, 'the two interrupted attempts were made again');
      const interrupted = scans.filter((s) => events(s, 'webhook_delivered')[0].message.includes('the previous one ended without an outcome'));
      assert.equal(interrupted.length, 2);
    } finally {
      await server.stop();
      await hooks.close();
    }
  });

  test('two instances on one PostgreSQL: every event delivered, never sent twice at the same time', async (t) => {
    if (!postgres.pg) return t.skip(postgres.skip);
    const env = storeEnv(mkdtempSync(path.join(os.tmpdir(), 'cc-hooks-pg-')), await postgres.pg.createDatabase());
    // Every first attempt is answered 500, so each event is sent twice; every answer takes a while, and
    // each instance sends one at a time: both instances take part, and would overlap if they could.
    const seen = new Set<string>();
    const hooks = await startReceiver((_, req) => {
      const id = String(req.headers['webhook-id']);
      const first = !seen.has(id);
      seen.add(id);
      return { status: first ? 500 : 204, afterMs: 100 };
    });
    const settings = { ...env, ...FAST, CATCOMFORT_SCAN_WORKERS: '1', CATCOMFORT_WEBHOOK_PER_RECEIVER: '1' };
    const [a, b] = await Promise.all([startServer(settings), startServer(settings)]);
    try {
      const cred = createHookCredential(settings, 'shared', '--webhook-url', `${hooks.url}/`);
      const ids: string[] = [];
      for (let i = 0; i < 12; i++) ids.push(await submitted((i % 2 ? a : b).url, cred, { image: i % 2 ? CAT : NO_CAT }));
      const pids = new Set<string>();
      for (const id of ids) {
        const scan = await waitForDelivery(a.url, id, cred);
        assert.equal(scan.webhook.attempts, 2);
        for (const line of events(scan, 'webhook_')) pids.add(/instance pid (\d+)/.exec(line.message)![1]!);
      }
      assert.equal(hooks.maxConcurrentPerId(), 1);
      assert.equal(hooks.received.length, ids.length * 2);
      assert.deepEqual([...pids].sort(), [String(a.child.pid), String(b.child.pid)].sort(), 'both instances delivered');
    } finally {
      await Promise.all([a.stop(), b.stop()]);
      await hooks.close();
    }
  });
});
