// The scan interface end to end, against SQLite and against a real PostgreSQL: lifecycle with
// base64 and URL input, metadata, idempotency, pagination, isolation, auth, SSRF refusals, two
// instances sharing one PostgreSQL, and a SIGKILL in the middle of work.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test as nodeTest } from 'node:test';
import Database from 'better-sqlite3';
import { SQLITE_FILE } from '../src/store';
import { postJson, request } from './helpers/http';
import { parseMetrics, total, type Sample } from './helpers/metrics';
import { photo } from './helpers/paths';
import { usePostgres } from './helpers/postgres';
import { cli, createCredential, getScan, scanHeaders, storeEnv, waitForScan, type Credential } from './helpers/scan';
import { startServer, type TestServer } from './helpers/server';
import { waitFor } from './helpers/wait';

const CAT = '000_skimage_chelsea.png';
const NO_CAT = '111_skimage_coffee.png';
const b64 = (file: string) => readFileSync(photo(file)).toString('base64');

/**
 * A local photo server on 127.0.0.1 (reachable only with CATCOMFORT_FETCH_ALLOW_PRIVATE).
 * /held/<photo> is answered only once the test calls release(), so a scan fetching it stays
 * PROCESSING for as long as the test needs; heldRequests counts the requests for it.
 */
async function photoServer() {
  let released = false;
  let heldRequests = 0;
  const held: Array<() => void> = [];
  const server = http.createServer((req, res) => {
    const name = path.basename(req.url ?? '');
    const answer = () => {
      try {
        const data = readFileSync(photo(name));
        res.writeHead(200, { 'content-type': name.endsWith('.png') ? 'image/png' : 'image/jpeg' }).end(data);
      } catch {
        res.writeHead(404).end();
      }
    };
    if (!req.url?.startsWith('/held/')) return answer();
    heldRequests++;
    if (released) answer();
    else held.push(answer);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    heldRequests: () => heldRequests,
    release() {
      released = true;
      for (const answer of held.splice(0)) answer();
    },
    close(): Promise<void> {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

const events = (scan: any, event: string): number => scan.logs.filter((l: any) => l.event === event).length;

function submit(url: string, c: Credential, body: unknown, headers: Record<string, string> = {}) {
  return postJson(`${url}/scan`, body, { ...scanHeaders(c), ...headers }, null);
}

type Backend = { url: string | null } | { skip: string };

function scanSuite(name: string, backend: () => Promise<Backend>) {
  describe(`scan interface on ${name}`, () => {
    let skip: string | null = null;
    /** A test that is skipped, saying why, when the backend is not available. */
    const test = (title: string, fn: () => Promise<void>) =>
      nodeTest(title, async (t) => (skip ? t.skip(skip) : fn()));
    let server: TestServer;
    let photos: Awaited<ReturnType<typeof photoServer>>;
    let env: Record<string, string>;
    let alice: Credential;
    let bob: Credential;

    before(async () => {
      const chosen = await backend();
      if ('skip' in chosen) {
        skip = chosen.skip;
        return;
      }
      env = storeEnv(mkdtempSync(path.join(os.tmpdir(), 'cc-scan-')), chosen.url);
      server = await startServer({ ...env, CATCOMFORT_FETCH_ALLOW_PRIVATE: 'true' });
      photos = await photoServer();
      alice = createCredential(env, 'alice');
      bob = createCredential(env, 'bob');
    });
    after(async () => {
      await server?.stop();
      await photos?.close();
    });

    test('base64 lifecycle: 202 with Location, then COMPLETED with the same result as /v2/predict', async () => {
      const res = await submit(server.url, alice, { image: b64(CAT), metadata: { petId: 'p-1', customerId: 'c-1', tags: ['indoor'] } });
      assert.equal(res.status, 202, res.text);
      const { scanId, status, createdAt } = res.body;
      assert.equal(status, 'PENDING');
      assert.match(createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.equal(res.headers.get('location'), `/scan/${scanId}`);
      const scan = await waitForScan(server.url, scanId, alice);
      const v2 = (await postJson(`${server.url}/v2/predict`, { image: b64(CAT) })).body;
      assert.equal(scan.status, 'COMPLETED');
      assert.equal(scan.isCat, v2.detection === 'detected');
      assert.equal(scan.detection, v2.detection);
      assert.deepEqual(scan.boundingBox, v2.cat.bounding_box);
      assert.equal(scan.predictions.cat_quality, v2.cat.detection_confidence);
      const p = v2.prediction.score;
      assert.equal(scan.predictions.prediction, p > 0.3 ? 'Unhappy' : 'Happy');
      assert.equal(scan.isHappy, !(p > 0.3));
      assert.equal(scan.predictions.message, 'Success');
      assert.deepEqual(scan.metadata, { petId: 'p-1', customerId: 'c-1', tags: ['indoor'] });
      assert.deepEqual(scan.image, v2.image);
      assert.ok(scan.logs.some((l: any) => l.event === 'submitted') && scan.logs.some((l: any) => l.event === 'claimed'));
      for (const entry of scan.logs) assert.match(entry.at, /Z$/);
      assert.equal(scan.error, null);
    });

    test('URL lifecycle through a local photo server', async () => {
      const res = await submit(server.url, alice, { imageUrl: `${photos.url}/${NO_CAT}` });
      assert.equal(res.status, 202);
      const scan = await waitForScan(server.url, res.body.scanId, alice);
      assert.equal(scan.status, 'COMPLETED');
      assert.equal(scan.source, 'url');
      assert.equal(scan.isCat, false);
      assert.equal(scan.isHappy, null);
      assert.equal(scan.predictions.message, 'No cats detected');
      assert.ok(scan.logs.some((l: any) => l.event === 'fetching_url'));
    });

    test('a URL that is not an image FAILS with a stable code', async () => {
      const res = await submit(server.url, alice, { imageUrl: `${photos.url}/missing.png` });
      const scan = await waitForScan(server.url, res.body.scanId, alice);
      assert.equal(scan.status, 'FAILED');
      assert.equal(scan.error.code, 'fetch_bad_status');
      assert.equal(scan.predictions, null);
    });

    test('an undecodable base64 image FAILS with invalid_image', async () => {
      const res = await submit(server.url, alice, { image: Buffer.from('not an image').toString('base64') });
      const scan = await waitForScan(server.url, res.body.scanId, alice);
      assert.equal(scan.status, 'FAILED');
      assert.deepEqual(scan.error, { code: 'invalid_image', message: 'Image could not be decoded.' });
    });

    test('/metrics counts the scans finished above by outcome and shows the scan queue empty', async () => {
      const outcomes = (samples: Sample[]) => ({
        completed: total(samples, 'catcomfort_scan_outcomes_total', { outcome: 'completed' }),
        invalidImage: total(samples, 'catcomfort_scan_outcomes_total', { outcome: 'failed', code: 'invalid_image' }),
        fetchBadStatus: total(samples, 'catcomfort_scan_outcomes_total', { outcome: 'failed', code: 'fetch_bad_status' }),
      });
      // Each outcome is counted just after its row is written: wait for the last one.
      const samples = await waitFor('four scan outcomes', async () => {
        const scraped = parseMetrics((await request(`${server.url}/metrics`)).text);
        const o = outcomes(scraped);
        return o.completed + o.invalidImage + o.fetchBadStatus >= 4 ? scraped : null;
      });
      assert.deepEqual(outcomes(samples), { completed: 2, invalidImage: 1, fetchBadStatus: 1 });
      assert.equal(total(samples, 'catcomfort_scan_queue_depth', { state: 'pending' }), 0);
      assert.equal(total(samples, 'catcomfort_scan_queue_depth', { state: 'processing' }), 0);
    });

    test('Idempotency-Key: a retry gets the original answer (202, same scan); another body with the key is 422', async () => {
      const body = { image: b64(NO_CAT), metadata: { petId: 'idem' } };
      const first = await submit(server.url, alice, body, { 'Idempotency-Key': 'retry-1' });
      const again = await submit(server.url, alice, body, { 'Idempotency-Key': 'retry-1' });
      assert.equal(first.status, 202);
      assert.equal(first.headers.get('idempotent-replayed'), null);
      assert.equal(again.status, 202);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(again.body.scanId, first.body.scanId);
      assert.equal(again.headers.get('location'), first.headers.get('location'));
      const other = await submit(server.url, alice, { ...body, metadata: { petId: 'other' } }, { 'Idempotency-Key': 'retry-1' });
      assert.equal(other.status, 422);
      assert.equal(other.body.error.code, 'idempotency_conflict');
      assert.equal(other.body.error.message, 'This Idempotency-Key was already used with a different request.');
      const bobs = await submit(server.url, bob, body, { 'Idempotency-Key': 'retry-1' });
      assert.equal(bobs.status, 202, 'keys are per credential');
      assert.notEqual(bobs.body.scanId, first.body.scanId);
    });

    test('listing: newest first, filters, cursor pages without gaps or repeats, isolation', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await submit(server.url, bob, { image: b64(NO_CAT), metadata: { petId: i % 2 ? 'odd' : 'even', customerId: 'pager' } });
        ids.push(res.body.scanId);
      }
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const q: string = `customerId=pager&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const page = await request(`${server.url}/scan?${q}`, { headers: scanHeaders(bob), key: null });
        assert.equal(page.status, 200, page.text);
        assert.ok(page.body.items.length <= 2);
        seen.push(...page.body.items.map((s: any) => s.scanId));
        cursor = page.body.nextCursor;
      } while (cursor);
      assert.deepEqual(seen, [...ids].reverse());
      const odd = await request(`${server.url}/scan?petId=odd`, { headers: scanHeaders(bob), key: null });
      assert.deepEqual(odd.body.items.map((s: any) => s.scanId), [ids[3], ids[1]]);
      const alices = await request(`${server.url}/scan?customerId=pager`, { headers: scanHeaders(alice), key: null });
      assert.deepEqual(alices.body.items, []);
      const foreign = await request(`${server.url}/scan/${ids[0]}`, { headers: scanHeaders(alice), key: null });
      assert.equal(foreign.status, 404);
      assert.equal(foreign.body.error.code, 'not_found');
      const bad = await request(`${server.url}/scan?cursor=nonsense`, { headers: scanHeaders(bob), key: null });
      assert.equal(bad.status, 422);
    });

    test('auth: missing or wrong secret, unknown key, revoked credential are 401 unauthorized', async () => {
      const carol = createCredential(env, 'carol');
      for (const headers of [{}, { 'api-key': alice.keyId }, { 'api-key': alice.keyId, 'api-secret': 'wrong' }, { 'api-key': 'sk_unknown', 'api-secret': alice.secret }, scanHeaders({ keyId: alice.keyId, secret: carol.secret })]) {
        const res = await request(`${server.url}/scan`, { headers, key: null });
        assert.equal(res.status, 401);
        assert.equal(res.body.error.code, 'unauthorized');
      }
      const wrongType = await request(`${server.url}/scan`, { method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' }, key: null });
      assert.equal(wrongType.status, 401, 'credentials are checked before the content type');
      cli(env, 'credentials', 'revoke', carol.keyId);
      assert.equal((await request(`${server.url}/scan`, { headers: scanHeaders(carol), key: null })).status, 401);
    });

    test('validation: exactly one image source, strict base64, bounded metadata', async () => {
      const cases: Array<[unknown, number, string]> = [
        [{}, 422, 'invalid_request'],
        [{ image: b64(CAT), imageUrl: `${photos.url}/${CAT}` }, 422, 'invalid_request'],
        [{ image: 'not*base64' }, 400, 'invalid_image'],
        [{ image: b64(CAT), metadata: { a: { b: { c: { d: { e: 1 } } } } } }, 422, 'invalid_request'],
        [{ image: b64(CAT), metadata: { petId: 5 } }, 422, 'invalid_request'],
        [{ image: b64(CAT), metadata: { big: 'x'.repeat(9000) } }, 422, 'invalid_request'],
        [{ image: b64(CAT), metadata: JSON.parse('{"a":' + '['.repeat(3000) + ']'.repeat(3000) + '}') }, 422, 'invalid_request'],
      ];
      for (const [body, status, code] of cases) {
        const res = await submit(server.url, alice, body);
        assert.equal(res.status, status, JSON.stringify(body).slice(0, 80));
        assert.equal(res.body.error.code, code);
      }
    });

    test('the scan description and docs are served', async () => {
      const spec = await request(`${server.url}/scan/openapi.json`, { key: null });
      assert.equal(spec.body.openapi, '3.1.0');
      assert.ok(spec.body.paths['/scan/{scanId}'].get);
      assert.equal((await request(`${server.url}/scan/docs`, { key: null })).status, 200);
    });
  });
}

const postgres = usePostgres();

scanSuite('SQLite', async () => ({ url: null }));
scanSuite('PostgreSQL', async () =>
  postgres.pg ? { url: await postgres.pg.createDatabase() } : { skip: postgres.skip },
);

describe('durability and sharing', () => {
  nodeTest('SIGKILL with scans in flight: the interrupted ones are taken again after their lease; every scan completes once', async () => {
    const env = storeEnv(mkdtempSync(path.join(os.tmpdir(), 'cc-crash-')), null);
    const settings = { ...env, CATCOMFORT_FETCH_ALLOW_PRIVATE: 'true', CATCOMFORT_SCAN_LEASE_MS: '3000', CATCOMFORT_SCAN_WORKERS: '3' };
    const photos = await photoServer();
    let server = await startServer(settings);
    try {
      const cred = createCredential(env, 'crash');
      // Two URL scans whose photo is held cannot finish before release(): two workers are
      // mid-scan when the kill lands, while the third works on the base64 scans.
      const held: string[] = [];
      for (let i = 0; i < 2; i++) held.push((await submit(server.url, cred, { imageUrl: `${photos.url}/held/${CAT}` })).body.scanId);
      for (const id of held) {
        await waitFor(`scan ${id} fetching its URL`, async () => {
          const scan = await getScan(server.url, id, cred);
          return scan.status === 'PROCESSING' && events(scan, 'fetching_url') === 1;
        });
      }
      await waitFor('both held photos requested', () => photos.heldRequests() >= 2);
      const ids = [...held];
      for (let i = 0; i < 12; i++) ids.push((await submit(server.url, cred, { image: b64(i % 2 ? CAT : NO_CAT) })).body.scanId);
      server.child.kill('SIGKILL');
      await new Promise((r) => server.child.once('exit', r));
      server = await startServer(settings);
      // The new instance takes the held scans again once the killed attempt's lease has run out:
      // their second fetches arrive. Only then are the photos released.
      await waitFor('the held scans fetched again', () => photos.heldRequests() >= 4);
      photos.release();
      for (const id of ids) {
        const scan = await waitForScan(server.url, id, cred);
        assert.equal(scan.status, 'COMPLETED', JSON.stringify(scan.error));
        assert.equal(events(scan, 'completed'), 1, `${id} completed once: ${JSON.stringify(scan.logs)}`);
      }
      for (const id of held) {
        const scan = await getScan(server.url, id, cred);
        assert.equal(events(scan, 'lease_expired_requeued'), 1, JSON.stringify(scan.logs));
        assert.equal(events(scan, 'claimed'), 2, JSON.stringify(scan.logs));
        assert.equal(events(scan, 'fetching_url'), 2, JSON.stringify(scan.logs));
      }
    } finally {
      await photos.close(); // first: a fetch still held fails at once instead of delaying the stop
      await server.stop();
    }
  });

  nodeTest('a slow scan keeps its lease: renewed past its first expiry, worked once, never handed to a second worker', async () => {
    const leaseMs = 3000;
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cc-lease-'));
    const env = storeEnv(dataDir, null);
    const server = await startServer({ ...env, CATCOMFORT_FETCH_ALLOW_PRIVATE: 'true', CATCOMFORT_SCAN_LEASE_MS: String(leaseMs), CATCOMFORT_SCAN_WORKERS: '2' });
    const photos = await photoServer();
    const db = new Database(path.join(dataDir, SQLITE_FILE), { readonly: true, fileMustExist: true });
    try {
      const cred = createCredential(env, 'lease');
      const id: string = (await submit(server.url, cred, { imageUrl: `${photos.url}/held/${CAT}` })).body.scanId;
      await waitFor('the worker fetching the photo', () => photos.heldRequests() >= 1);
      const row = () =>
        db.prepare('SELECT status, attempts, worker_id, lease_until FROM scans WHERE id = ?').get(id) as {
          status: string;
          attempts: number;
          worker_id: string;
          lease_until: number;
        };
      const claimedAt = (db.prepare("SELECT at FROM scan_logs WHERE scan_id = ? AND event = 'claimed'").get(id) as { at: number }).at;
      const holder = row().worker_id;
      // A renewal made after the first lease ran out (claimedAt + leaseMs) sets lease_until past
      // claimedAt + 2 * leaseMs. Two such renewals while the other worker polls: the lease held.
      const renewals = new Set<number>();
      await waitFor('two lease renewals after the first expiry', () => {
        const now = row();
        assert.deepEqual([now.status, now.attempts, now.worker_id], ['PROCESSING', 1, holder], 'the scan changed hands');
        if (now.lease_until > claimedAt + 2 * leaseMs) renewals.add(now.lease_until);
        return renewals.size >= 2;
      });
      photos.release();
      const scan = await waitForScan(server.url, id, cred);
      assert.equal(scan.status, 'COMPLETED');
      assert.equal(events(scan, 'claimed'), 1, JSON.stringify(scan.logs));
      assert.equal(events(scan, 'lease_expired_requeued'), 0);
      assert.equal(events(scan, 'completed'), 1);
    } finally {
      db.close();
      await photos.close();
      await server.stop();
    }
  });

  nodeTest('two instances on one PostgreSQL: submit on one, read on the other, both work the queue', async (t) => {
    if (!postgres.pg) return t.skip(postgres.skip);
    const env = storeEnv(mkdtempSync(path.join(os.tmpdir(), 'cc-pg2-')), await postgres.pg.createDatabase());
    const cred = createCredential(env, 'shared');
    // An instance without the unsafe switch, alone on the queue, refuses a private address.
    const guard = await startServer({ ...env, CATCOMFORT_SCAN_WORKERS: '1' });
    let blockedId: string;
    try {
      blockedId = (await submit(guard.url, cred, { imageUrl: 'http://127.0.0.1:9/cat.jpg' })).body.scanId;
      await waitForScan(guard.url, blockedId, cred);
    } finally {
      await guard.stop();
    }
    const photos = await photoServer();
    const shared = { ...env, CATCOMFORT_FETCH_ALLOW_PRIVATE: 'true', CATCOMFORT_SCAN_WORKERS: '1' };
    const [a, b] = await Promise.all([startServer(shared), startServer(shared)]);
    try {
      const refused = await getScan(a.url, blockedId, cred);
      assert.equal(refused.status, 'FAILED');
      assert.equal(refused.error.code, 'fetch_address_blocked');
      // One worker per instance, and a worker fetching a held photo takes no other scan: two held
      // scans submitted on one instance are claimed one by each.
      const held: string[] = [];
      for (let i = 0; i < 2; i++) held.push((await submit(a.url, cred, { imageUrl: `${photos.url}/held/${CAT}` })).body.scanId);
      await waitFor('both held photos requested', () => photos.heldRequests() >= 2);
      photos.release();
      const pids = new Set<string>();
      for (const id of held) {
        const scan = await waitForScan(b.url, id, cred);
        assert.equal(scan.status, 'COMPLETED');
        const worker = scan.logs.find((l: any) => l.event === 'worker');
        pids.add(/pid (\d+)/.exec(worker.message)![1]!);
      }
      assert.deepEqual([...pids].sort(), [String(a.child.pid), String(b.child.pid)].sort(), 'both instances processed scans');
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) ids.push((await submit(a.url, cred, { image: b64(i % 2 ? CAT : NO_CAT) })).body.scanId);
      for (const id of ids) assert.equal((await waitForScan(b.url, id, cred)).status, 'COMPLETED');
    } finally {
      await photos.close();
      await Promise.all([a.stop(), b.stop()]);
    }
  });
});
