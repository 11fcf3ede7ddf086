// Scan store: the same suite against SQLite (temp folder) and PostgreSQL (a throwaway cluster or
// CATCOMFORT_TEST_DATABASE_URL; skipped with the reason when neither is available), plus the
// credentials CLI against SQLite.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { KeyRing } from '../src/keys/key-ring';
import Database from 'better-sqlite3';
import { InvalidCursorError, openStore, sha256Hex, SQLITE_FILE, type NewScan, type SqlValue, type Store } from '../src/store';
import { postgresMigrations } from '../src/store/migrations';
import { CACHE_KIB } from '../src/store/sqlite-db';
import { startTestPostgres } from './helpers/postgres';
import { repoRoot } from './helpers/paths';

interface Backend {
  /** A store on a fresh, empty database. */
  fresh(): Promise<Store>;
  /** A second store on the same database as the last `fresh()` (another "instance"). */
  sibling(): Promise<Store>;
  /** One write to the last `fresh()` database by another connection, one that no lock of this process orders (SQLite: as another process would). */
  writeElsewhere(sql: string, params: SqlValue[]): Promise<void>;
  cleanup(): Promise<void>;
}

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'catcomfort-store-'));
}

function sqliteBackend(): Backend {
  const dirs: string[] = [];
  return {
    async fresh() {
      dirs.push(tempDir());
      return openStore({ dataDir: dirs[dirs.length - 1]! });
    },
    async sibling() {
      return openStore({ dataDir: dirs[dirs.length - 1]! });
    },
    async writeElsewhere(sql, params) {
      const other = new Database(path.join(dirs[dirs.length - 1]!, SQLITE_FILE));
      try {
        other.prepare(sql.replace(/\$\d+/g, '?')).run(...params);
      } finally {
        other.close();
      }
    },
    async cleanup() {
      for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

function newScan(ownerId: string, over: Partial<NewScan> = {}): NewScan {
  return {
    ownerId,
    source: 'base64',
    image: Buffer.from('fake image bytes'),
    imageUrl: null,
    callbackUrl: null,
    metadata: {},
    idempotencyKey: null,
    requestHash: 'h1',
    ...over,
  };
}

async function created(store: Store, scan: NewScan) {
  const r = await store.scans.create(scan);
  assert.ok(!('conflict' in r));
  return r.scan;
}

/** Raw image column, read through the SQL seam (the stores never return it after a claim). */
async function imageIsNull(store: Store, id: string): Promise<boolean> {
  const [row] = await store.db.query<{ image: Buffer | null }>('SELECT image FROM scans WHERE id = $1', [id]);
  return row!.image === null;
}

/** Length of the lease a claim gave (lease_until - updated_at, both set by the claim), in ms. */
async function leaseLength(store: Store, id: string): Promise<number> {
  const sql =
    store.kind === 'sqlite'
      ? 'SELECT lease_until - updated_at AS ms FROM scans WHERE id = $1'
      : 'SELECT (extract(epoch FROM lease_until - updated_at) * 1000)::float8 AS ms FROM scans WHERE id = $1';
  const [row] = await store.db.query<{ ms: number }>(sql, [id]);
  return row!.ms;
}

/**
 * Every running lease ends, as if an hour had passed: lease_until moves an hour back. Leases
 * in these tests are a minute long, so none can run out by itself on a slow machine.
 */
async function endLeases(store: Store): Promise<void> {
  const back = store.kind === 'sqlite' ? '3600000' : "interval '1 hour'";
  await store.db.run(`UPDATE scans SET lease_until = lease_until - ${back} WHERE status = 'PROCESSING'`);
}

async function suite(t: TestContext, backend: Backend): Promise<void> {
  const withStore = (name: string, fn: (store: Store) => Promise<void>) =>
    t.test(name, async () => {
      const store = await backend.fresh();
      try {
        await fn(store);
      } finally {
        await store.close();
      }
    });

  await withStore('migrations are idempotent (migrate twice, second instance)', async (store) => {
    await store.db.migrate();
    await store.db.migrate();
    const other = await backend.sibling();
    try {
      await other.db.migrate();
      const scan = await created(other, newScan('o1'));
      assert.equal((await store.scans.get('o1', scan.id))?.id, scan.id);
    } finally {
      await other.close();
    }
  });

  await withStore('readScans: its reads share one view, a write committed meanwhile shows after it; writes are refused inside', async (store) => {
    const scan = await created(store, newScan('o1'));
    const note = `INSERT INTO scan_logs (scan_id, at, event, message) SELECT id, created_at, 'note', 'written meanwhile' FROM scans WHERE id = $1`;
    const [first, second] = await store.readScans(async (scans) => {
      const first = await scans.get('o1', scan.id);
      await backend.writeElsewhere(note, [scan.id]);
      return [first, await scans.get('o1', scan.id)];
    });
    assert.deepEqual(second, first);
    assert.deepEqual(
      (await store.scans.get('o1', scan.id))!.logs.map((l) => l.event),
      ['submitted', 'note'],
    );
    await assert.rejects(
      store.db.snapshot((view) => view.run(note, [scan.id])),
      /a write in a snapshot/,
    );
  });

  await withStore("rollouts keep a shadow's share; one recorded before shadows had a share (0) reads as every request", async (store) => {
    const serving = { version: '1.3.0', dir: '/models/bc-v1' };
    const shadow = (share: number) => ({ version: '2.0.0', dir: '/models/bc-v1@2.0.0', role: 'shadow' as const, share });
    await store.rollouts.record('bc-v1', { serving, other: shadow(0.1), unloaded: false }, 'test', 0);
    assert.deepEqual((await store.rollouts.all())[0]!.other, shadow(0.1));
    await store.rollouts.record('bc-v1', { serving, other: shadow(0), unloaded: false }, 'test', 1);
    assert.deepEqual((await store.rollouts.all())[0]!.other, shadow(1));
  });

  await withStore('rollouts: compare-and-set on the generation; an unload keeps the row, a reload goes on counting', async (store) => {
    const v1 = { serving: { version: '1.0.0', dir: '/packs/a' }, other: null, unloaded: false };
    const v2 = { serving: { version: '2.0.0', dir: '/packs/a2' }, other: null, unloaded: false };
    const gone = { ...v1, unloaded: true };
    // Two instances that both saw no row: one records generation 1, the other is refused.
    const first = await Promise.all([store.rollouts.record('a', v1, 'k1', 0), store.rollouts.record('a', v2, 'k2', 0)]);
    assert.deepEqual(first.filter((g) => g !== null), [1]);
    const [winner] = await store.rollouts.all();
    assert.equal(winner!.serving.version, first[0] === 1 ? '1.0.0' : '2.0.0');
    // Two instances that both saw generation 1.
    const second = await Promise.all([store.rollouts.record('a', v1, 'k1', 1), store.rollouts.record('a', gone, 'k2', 1)]);
    assert.deepEqual(second.filter((g) => g !== null), [2]);
    assert.equal(await store.rollouts.record('a', gone, 'k2', 1), null, 'a stale generation is refused');
    assert.equal(await store.rollouts.record('a', gone, 'k2', 2), 3);
    const unloaded = (await store.rollouts.all())[0]!;
    assert.equal(unloaded.unloaded, true);
    assert.equal(unloaded.other, null);
    assert.equal(await store.rollouts.record('a', v2, 'k1', 3), 4);
    assert.deepEqual(
      (await store.rollouts.all()).map((r) => [r.packId, r.unloaded, r.generation, r.serving.version]),
      [['a', false, 4, '2.0.0']],
    );
  });

  await withStore('fleet: each instance beats with what it applied; the listing ages them on the database clock', async (store) => {
    await store.fleet.beat({ instanceId: 'pod-a/1', host: 'pod-a', startedAt: new Date(0).toISOString(), applied: { 'bc-v1': 2 }, versions: { 'bc-v1': { '1.3.0': 'serving' } } });
    await store.fleet.beat({ instanceId: 'pod-b/1', host: 'pod-b', startedAt: new Date(0).toISOString(), applied: {}, versions: {} });
    await store.fleet.beat({ instanceId: 'pod-a/1', host: 'pod-a', startedAt: new Date(0).toISOString(), applied: { 'bc-v1': 3 }, versions: { 'bc-v1': { '2.0.0': 'serving' } } });
    const listed = await store.fleet.list();
    assert.deepEqual(listed.map((i) => [i.instanceId, i.applied]), [['pod-a/1', { 'bc-v1': 3 }], ['pod-b/1', {}]]);
    assert.deepEqual(listed[0]!.versions, { 'bc-v1': { '2.0.0': 'serving' } });
    for (const i of listed) assert.ok(i.sinceSeenMs >= 0 && i.sinceSeenMs < 60_000, String(i.sinceSeenMs));
    await store.fleet.leave('pod-b/1');
    assert.deepEqual((await store.fleet.list()).map((i) => i.instanceId), ['pod-a/1']);
  });

  await withStore('one generated API key per database: the first instance makes it, the others find it', async (store) => {
    const made = await Promise.all([store.apiKeys.fleetKey(), store.apiKeys.fleetKey()]);
    const keys = made.filter((m) => m.key !== null);
    assert.equal(keys.length, 1);
    assert.equal(made[0]!.id, made[1]!.id);
    assert.deepEqual(await store.apiKeys.activeDigests(), [sha256Hex(keys[0]!.key!)]);
    assert.equal((await store.apiKeys.fleetKey()).key, null);
    await store.apiKeys.revoke(made[0]!.id);
    const again = await store.apiKeys.fleetKey();
    assert.notEqual(again.key, null, 'a revoked generated key is replaced');
    assert.notEqual(again.id, made[0]!.id);
  });

  await withStore('create and get; owners are isolated; malformed ids are unknown', async (store) => {
    const scan = await created(
      store,
      newScan('owner-a', { metadata: { petId: 'p1', customerId: 'c1', tags: ['x'] }, idempotencyKey: null }),
    );
    assert.equal(scan.status, 'PENDING');
    assert.equal(scan.ownerId, 'owner-a');
    assert.equal(scan.source, 'base64');
    assert.equal(scan.attempts, 0);
    assert.deepEqual(scan.metadata, { petId: 'p1', customerId: 'c1', tags: ['x'] });
    assert.match(scan.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.equal(scan.completedAt, null);
    assert.equal(scan.result, null);
    assert.equal(scan.error, null);
    assert.deepEqual(
      scan.logs.map((l) => l.event),
      ['submitted'],
    );
    const again = await store.scans.get('owner-a', scan.id);
    assert.deepEqual(again, scan);
    assert.deepEqual(await store.scans.get('owner-a', scan.id.toUpperCase()), scan);
    assert.equal(await store.scans.get('owner-b', scan.id), null);
    assert.equal(await store.scans.get('owner-a', randomUUID()), null);
    assert.equal(await store.scans.get('owner-a', 'not-a-uuid'), null);
    const url = await created(store, newScan('owner-a', { source: 'url', image: null, imageUrl: 'https://example.com/cat.jpg' }));
    assert.equal(url.imageUrl, 'https://example.com/cat.jpg');
  });

  await withStore('idempotent create: same key returns the scan, another body conflicts', async (store) => {
    const first = await store.scans.create(newScan('o', { idempotencyKey: 'k1', requestHash: 'hash-a' }));
    assert.ok('scan' in first && first.created);
    const replay = await store.scans.create(newScan('o', { idempotencyKey: 'k1', requestHash: 'hash-a' }));
    assert.ok('scan' in replay);
    assert.equal(replay.created, false);
    assert.equal(replay.scan.id, first.scan.id);
    assert.deepEqual(await store.scans.create(newScan('o', { idempotencyKey: 'k1', requestHash: 'hash-b' })), { conflict: true });
    // The key is per owner, and no key means no deduplication.
    const otherOwner = await store.scans.create(newScan('o2', { idempotencyKey: 'k1', requestHash: 'hash-b' }));
    assert.ok('scan' in otherOwner && otherOwner.created && otherOwner.scan.id !== first.scan.id);
    const a = await created(store, newScan('o'));
    const b = await created(store, newScan('o'));
    assert.notEqual(a.id, b.id);
    // Concurrent creates with one key: exactly one is created.
    const results = await Promise.all(
      Array.from({ length: 8 }, () => store.scans.create(newScan('o', { idempotencyKey: 'k2', requestHash: 'hash-c' }))),
    );
    const scans = results.map((r) => {
      assert.ok('scan' in r);
      return r;
    });
    assert.equal(scans.filter((r) => r.created).length, 1);
    assert.equal(new Set(scans.map((r) => r.scan.id)).size, 1);
  });

  await withStore('list: newest first, filters, cursor pages without duplicates or misses', async (store) => {
    const ids: string[] = [];
    for (let i = 0; i < 25; i += 1) {
      const scan = await created(
        store,
        newScan('lister', { metadata: { petId: i % 2 === 0 ? 'even' : 'odd', customerId: i % 5 === 0 ? 'c5' : 'cx', n: i } }),
      );
      ids.push(scan.id);
      if (i % 7 === 0) await sleep(2); // a mix of equal and different timestamps
    }
    await created(store, newScan('someone-else', { metadata: { petId: 'even' } }));
    const all = await store.scans.list('lister', { limit: 100 });
    assert.equal(all.items.length, 25);
    assert.equal(all.nextCursor, null);
    for (let i = 1; i < all.items.length; i += 1) {
      const prev = all.items[i - 1]!;
      const cur = all.items[i]!;
      assert.ok(prev.createdAt > cur.createdAt || (prev.createdAt === cur.createdAt && prev.id > cur.id), 'order');
    }
    assert.deepEqual(new Set(all.items.map((s) => s.id)), new Set(ids));
    assert.deepEqual(all.items[0]!.metadata, { petId: 'even', customerId: 'cx', n: 24 });
    assert.ok(all.items.every((s) => s.logs.length === 1));

    const paged: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await store.scans.list('lister', { limit: 4, ...(cursor ? { cursor } : {}) });
      assert.ok(page.items.length <= 4);
      paged.push(...page.items.map((s) => s.id));
      cursor = page.nextCursor ?? undefined;
      pages += 1;
      // New scans arriving while paging do not disturb the remaining pages.
      if (pages === 2) await created(store, newScan('lister'));
    } while (cursor !== undefined);
    assert.equal(pages, 7);
    assert.deepEqual(paged, all.items.map((s) => s.id));

    const even = await store.scans.list('lister', { petId: 'even', limit: 100 });
    assert.equal(even.items.length, 13);
    assert.ok(even.items.every((s) => s.metadata.petId === 'even'));
    const both = await store.scans.list('lister', { petId: 'even', customerId: 'c5', limit: 100 });
    assert.deepEqual(
      both.items.map((s) => s.metadata.n),
      [20, 10, 0],
    );
    const evenPaged: string[] = [];
    cursor = undefined;
    do {
      const page = await store.scans.list('lister', { petId: 'even', limit: 5, ...(cursor ? { cursor } : {}) });
      evenPaged.push(...page.items.map((s) => s.id));
      cursor = page.nextCursor ?? undefined;
    } while (cursor !== undefined);
    assert.deepEqual(evenPaged, even.items.map((s) => s.id));
    assert.equal((await store.scans.list('lister', { petId: 'EVEN', limit: 10 })).items.length, 0);
    assert.equal((await store.scans.list('nobody', { limit: 10 })).items.length, 0);

    await assert.rejects(store.scans.list('lister', { limit: 10, cursor: 'garbage!' }), InvalidCursorError);
    await assert.rejects(
      store.scans.list('lister', { limit: 10, cursor: Buffer.from('["x","y"]').toString('base64url') }),
      InvalidCursorError,
    );
    await assert.rejects(store.scans.list('lister', { limit: 0 }), RangeError);
    await assert.rejects(store.scans.list('lister', { limit: 101 }), RangeError);
  });

  await withStore('claim: oldest first, PROCESSING with a lease, then complete drops the image', async (store) => {
    assert.equal(await store.scans.claim('w1', 60_000, 3), null);
    const first = await created(store, newScan('o', { image: Buffer.from('one') }));
    const second = await created(store, newScan('o', { source: 'url', image: null, imageUrl: 'https://example.com/c.png' }));
    const c1 = await store.scans.claim('w1', 60_000, 3);
    assert.deepEqual(c1, { id: first.id, ownerId: 'o', source: 'base64', image: Buffer.from('one'), imageUrl: null, attempts: 1 });
    const c2 = await store.scans.claim('w2', 60_000, 3);
    assert.equal(c2?.id, second.id);
    assert.equal(c2?.imageUrl, 'https://example.com/c.png');
    assert.equal(await store.scans.claim('w3', 60_000, 3), null, 'leased scans are not claimable');
    const processing = await store.scans.get('o', first.id);
    assert.equal(processing?.status, 'PROCESSING');
    assert.equal(processing?.attempts, 1);
    assert.deepEqual(
      processing?.logs.map((l) => l.event),
      ['submitted', 'claimed'],
    );

    await store.scans.appendLog(first.id, 'fetching_url', 'nothing to fetch');
    assert.equal(await store.scans.extendLease(first.id, 'w1', 60_000), true);
    assert.equal(await store.scans.extendLease(first.id, 'w2', 60_000), false);
    assert.equal(await store.scans.complete(first.id, 'w2', { isCat: true }), false, 'not the holder');
    const result = { isCat: true, isHappy: false, predictions: { prediction: 'Unhappy', probability: 0.8 } };
    assert.equal(await store.scans.complete(first.id, 'w1', result), true);
    assert.equal(await store.scans.complete(first.id, 'w1', result), false, 'already completed');
    assert.equal(await store.scans.fail(first.id, 'w1', { code: 'x', message: 'y' }), false);
    const done = await store.scans.get('o', first.id);
    assert.equal(done?.status, 'COMPLETED');
    assert.deepEqual(done?.result, result);
    assert.equal(done?.error, null);
    assert.ok(done?.completedAt !== null && done!.completedAt >= done!.createdAt);
    assert.deepEqual(
      done?.logs.map((l) => l.event),
      ['submitted', 'claimed', 'fetching_url', 'completed'],
    );
    assert.ok(await imageIsNull(store, first.id));

    assert.equal(await store.scans.fail(second.id, 'w2', { code: 'fetch_failed', message: 'HTTP 404' }), true);
    const failed = await store.scans.get('o', second.id);
    assert.equal(failed?.status, 'FAILED');
    assert.deepEqual(failed?.error, { code: 'fetch_failed', message: 'HTTP 404' });
    assert.equal(failed?.result, null);
    assert.equal(failed?.logs.at(-1)?.event, 'failed');
    assert.ok(await imageIsNull(store, second.id));
    assert.equal(await store.scans.claim('w1', 60_000, 3), null);
  });

  await withStore('lease expiry: claimable again with attempts+1; lost lease cannot complete; maxAttempts fails', async (store) => {
    const scan = await created(store, newScan('o'));
    const a1 = await store.scans.claim('w1', 60_000, 3);
    assert.equal(a1?.attempts, 1);
    assert.equal(await leaseLength(store, scan.id), 60_000);
    assert.equal(await store.scans.claim('w2', 60_000, 3), null, 'the lease is held');
    await endLeases(store);
    const a2 = await store.scans.claim('w2', 60_000, 3);
    assert.equal(a2?.id, scan.id);
    assert.equal(a2?.attempts, 2);
    assert.ok(a2?.image !== null, 'image still there for the retry');
    assert.equal(await store.scans.complete(scan.id, 'w1', { late: true }), false, 'w1 lost its lease');
    assert.equal(await store.scans.extendLease(scan.id, 'w1', 1000), false);
    await endLeases(store);
    assert.equal(await store.scans.extendLease(scan.id, 'w2', 60_000), true, 'the holder renews its lease');
    assert.equal(await store.scans.claim('w3', 60_000, 3), null, 'the renewed lease is held');
    await endLeases(store);
    assert.equal((await store.scans.claim('w3', 60_000, 3))?.attempts, 3);
    await endLeases(store);
    assert.equal(await store.scans.claim('w4', 60_000, 3), null, 'third lease expired: no more attempts');
    const failed = await store.scans.get('o', scan.id);
    assert.equal(failed?.status, 'FAILED');
    assert.equal(failed?.error?.code, 'processing_failed');
    assert.equal(failed?.attempts, 3);
    assert.ok(failed?.completedAt !== null);
    assert.deepEqual(
      failed?.logs.map((l) => l.event),
      ['submitted', 'claimed', 'lease_expired_requeued', 'claimed', 'lease_expired_requeued', 'claimed', 'failed'],
    );
    for (const log of failed!.logs) assert.match(log.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.ok(await imageIsNull(store, scan.id));
    assert.equal(await store.scans.complete(scan.id, 'w3', { late: true }), false);

    // A worker still holding an expired lease (nobody reclaimed yet) may still finish.
    const other = await created(store, newScan('o'));
    assert.equal((await store.scans.claim('w5', 60_000, 3))?.id, other.id);
    await endLeases(store);
    assert.equal(await store.scans.complete(other.id, 'w5', { ok: 1 }), true);
  });

  await withStore('purge removes finished scans older than the cutoff', async (store) => {
    const done = await created(store, newScan('o'));
    const pending = await created(store, newScan('o'));
    await store.scans.claim('w', 60_000, 3);
    await store.scans.complete(done.id, 'w', { ok: true });
    assert.equal(await store.scans.purge(new Date(Date.now() - 60_000)), 0);
    assert.equal(await store.scans.purge(new Date(Date.now() + 1000)), 1);
    assert.equal(await store.scans.get('o', done.id), null);
    assert.equal((await store.scans.get('o', pending.id))?.status, 'PENDING');
    // The idempotency key of a purged scan is free again.
    const k = await created(store, newScan('o', { idempotencyKey: 'kp' }));
    await store.scans.claim('w', 60_000, 3);
    await store.scans.claim('w', 60_000, 3);
    assert.equal(await store.scans.fail(k.id, 'w', { code: 'invalid_image', message: 'bad' }), true);
    assert.equal(await store.scans.purge(new Date(Date.now() + 1000)), 1);
    const again = await store.scans.create(newScan('o', { idempotencyKey: 'kp', requestHash: 'other' }));
    assert.ok('scan' in again && again.created);
  });

  await withStore('two instances claiming at once never take the same scan', async (store) => {
    const ids = new Set<string>();
    for (let i = 0; i < 20; i += 1) ids.add((await created(store, newScan(`o${i % 3}`))).id);
    const other = await backend.sibling();
    try {
      const take = async (s: Store, worker: string): Promise<string[]> => {
        const got: string[] = [];
        for (;;) {
          const c = await s.scans.claim(worker, 60_000, 3);
          if (c === null) return got;
          got.push(c.id);
        }
      };
      // The second instance claims one on its own first (so it certainly works this queue), then
      // six claimers on the two instances race for the rest.
      const first = await other.scans.claim('b0', 60_000, 3);
      assert.ok(first !== null, 'the second instance took one');
      const results = await Promise.all([
        take(store, 'a1'),
        take(store, 'a2'),
        take(store, 'a3'),
        take(other, 'b1'),
        take(other, 'b2'),
        take(other, 'b3'),
      ]);
      const all = [first.id, ...results.flat()];
      assert.equal(all.length, 20, 'no scan claimed twice');
      assert.deepEqual(new Set(all), ids, 'every scan claimed');
    } finally {
      await other.close();
    }
  });

  await withStore('scan credentials: create, verify, wrong secret, unknown key, revoke', async (store) => {
    const cred = await store.credentials.create('partner A');
    assert.match(cred.keyId, /^sk_[0-9a-f]{24}$/);
    assert.ok(cred.secret.length >= 40);
    assert.equal(await store.credentials.verify(cred.keyId, cred.secret), cred.id);
    assert.equal(await store.credentials.verify(cred.keyId, cred.secret + 'x'), null);
    assert.equal(await store.credentials.verify(cred.keyId, ''), null);
    assert.equal(await store.credentials.verify('sk_unknown', cred.secret), null);
    const other = await store.credentials.create('partner B');
    assert.equal(await store.credentials.verify(other.keyId, cred.secret), null, 'secrets are per credential');
    const list = await store.credentials.list();
    assert.deepEqual(
      list.map((c) => [c.keyId, c.name, c.revokedAt]),
      [
        [cred.keyId, 'partner A', null],
        [other.keyId, 'partner B', null],
      ],
    );
    assert.ok(!JSON.stringify(list).includes(cred.secret));
    assert.equal(await store.credentials.revoke(cred.keyId), true);
    assert.equal(await store.credentials.revoke(cred.keyId), true, 'revoking twice is fine');
    assert.equal(await store.credentials.verify(cred.keyId, cred.secret), null);
    assert.equal(await store.credentials.revoke(other.id), true, 'by credential id too');
    assert.equal(await store.credentials.revoke('sk_nope'), false);
    assert.ok((await store.credentials.list()).every((c) => c.revokedAt !== null));
    await assert.rejects(store.credentials.create('  '), TypeError);
  });

  await withStore('api keys: create, list, digests, revoke', async (store) => {
    const k1 = await store.apiKeys.create('mobile app');
    const k2 = await store.apiKeys.create('partner');
    assert.match(k1.key, /^cc_[A-Za-z0-9_-]{32}$/);
    const sha = (s: string) => createHash('sha256').update(s).digest('hex');
    assert.deepEqual(await store.apiKeys.activeDigests(), [sha(k1.key), sha(k2.key)]);
    const ring = new KeyRing([]);
    ring.setIssuedDigests(await store.apiKeys.activeDigests());
    assert.ok(ring.check(k1.key) && ring.check(k2.key) && !ring.check('cc_other'));
    assert.deepEqual(
      (await store.apiKeys.list()).map((k) => [k.id, k.name, k.revokedAt]),
      [
        [k1.id, 'mobile app', null],
        [k2.id, 'partner', null],
      ],
    );
    assert.equal(await store.apiKeys.revoke(k1.id), true);
    assert.equal(await store.apiKeys.revoke(randomUUID()), false);
    assert.equal(await store.apiKeys.revoke('nope'), false);
    assert.deepEqual(await store.apiKeys.activeDigests(), [sha(k2.key)]);
    assert.notEqual((await store.apiKeys.list())[0]!.revokedAt, null);
  });
}

test('SQLite store', async (t) => {
  const backend = sqliteBackend();
  try {
    await suite(t, backend);
    await t.test('the file uses WAL and synchronous=FULL, with a page cache of CACHE_KIB', async () => {
      const dir = tempDir();
      const store = await openStore({ dataDir: path.join(dir, 'nested') });
      try {
        assert.deepEqual(await store.db.query('PRAGMA journal_mode'), [{ journal_mode: 'wal' }]);
        assert.deepEqual(await store.db.query('PRAGMA synchronous'), [{ synchronous: 2 }]);
        assert.deepEqual(await store.db.query('PRAGMA cache_size'), [{ cache_size: -CACHE_KIB }]);
        assert.ok(fs.existsSync(path.join(dir, 'nested', 'catcomfort.sqlite3')));
      } finally {
        await store.close();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  } finally {
    await backend.cleanup();
  }
});

test('PostgreSQL store', { timeout: 180_000 }, async (t) => {
  const probe = await startTestPostgres();
  if (probe.pg === null) {
    t.skip(`PostgreSQL not available: ${probe.reason}`);
    return;
  }
  const server = probe.pg;
  t.diagnostic(`PostgreSQL: ${server.description}`);
  const stores: Store[] = [];
  let url = '';
  const backend: Backend = {
    async fresh() {
      url = await server.createDatabase();
      return openStore({ databaseUrl: url, dataDir: '/nonexistent' });
    },
    async sibling() {
      const s = await openStore({ databaseUrl: url, dataDir: '/nonexistent' });
      stores.push(s);
      return s;
    },
    async writeElsewhere(sql, params) {
      await (await backend.sibling()).db.run(sql, params);
    },
    async cleanup() {
      for (const s of stores) await s.close();
    },
  };
  try {
    await suite(t, backend);
    await t.test('instances starting at once migrate once', async () => {
      url = await server.createDatabase();
      const opened = await Promise.all(Array.from({ length: 4 }, () => openStore({ databaseUrl: url, dataDir: '/nonexistent' })));
      try {
        const rows = await opened[0]!.db.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
        assert.deepEqual(
          rows.map((r) => r.version),
          postgresMigrations.map((m) => m.version),
        );
      } finally {
        for (const s of opened) await s.close();
      }
    });
    await t.test('CATCOMFORT_DATABASE_POOL bounds the connections one instance holds', async () => {
      url = await server.createDatabase();
      const store = await openStore({ databaseUrl: url, dataDir: '/nonexistent', databasePool: 2 });
      const watcher = await openStore({ databaseUrl: url, dataDir: '/nonexistent', databasePool: 1 });
      try {
        const held = () =>
          watcher.db.query<{ n: string }>('SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()').then((r) => Number(r[0]!.n));
        const sleeping = Promise.all(Array.from({ length: 6 }, () => store.db.query('SELECT pg_sleep(0.2)')));
        let most = 0;
        let done = false;
        void sleeping.then(() => (done = true));
        while (!done) {
          most = Math.max(most, await held());
          await sleep(20);
        }
        await sleeping;
        assert.equal(most, 2);
      } finally {
        await store.close();
        await watcher.close();
      }
    });
  } finally {
    await backend.cleanup();
    await server.stop();
  }
});

function runCli(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(repoRoot, 'dist/src/cli/main.js'), ...args], {
      env: { ...process.env, CATCOMFORT_DATABASE_URL: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

test('keys and credentials commands of the catcomfort CLI against SQLite', async () => {
  const dir = tempDir();
  const env = { CATCOMFORT_DATA_DIR: dir };
  try {
    const usage = await runCli([], env);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /Usage: catcomfort <command>/);
    assert.equal((await runCli(['bogus'], env)).code, 2);
    assert.equal((await runCli(['credentials', 'create'], env)).code, 2);
    assert.equal((await runCli(['keys', 'revoke'], env)).code, 2);
    assert.equal((await runCli(['keys', 'list', '--bogus'], env)).code, 2);
    const help = await runCli(['credentials', '--help'], env);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /create --name NAME/);
    const keysHelp = await runCli(['keys', 'create', '--help'], env);
    assert.equal(keysHelp.code, 0);
    assert.match(keysHelp.stdout, /within 30 s/);

    const made = await runCli(['credentials', 'create', '--name', 'partner A'], env);
    assert.equal(made.code, 0, made.stderr);
    const keyId = /key id: (\S+)/.exec(made.stdout)?.[1];
    const secret = /secret: (\S+)/.exec(made.stdout)?.[1];
    assert.ok(keyId && secret);
    assert.match(made.stdout, /not shown again/);

    // A former name of the credentials CLI (npm run credentials -- create-api-key ...).
    const apiKey = await runCli(['create-api-key', '--name=mobile'], env);
    assert.equal(apiKey.code, 0, apiKey.stderr);
    const key = /api key: (\S+)/.exec(apiKey.stdout)?.[1];
    const keyRowId = /^id: (\S+)/m.exec(apiKey.stdout)?.[1];
    assert.ok(key && keyRowId);

    const store = await openStore({ dataDir: dir });
    try {
      assert.ok((await store.credentials.verify(keyId, secret)) !== null);
      assert.deepEqual(await store.apiKeys.activeDigests(), [createHash('sha256').update(key).digest('hex')]);
    } finally {
      await store.close();
    }

    const listed = await runCli(['credentials', 'list'], env);
    assert.equal(listed.code, 0);
    assert.match(listed.stdout, new RegExp(`${keyId}\\t.*\\tactive\\t.*partner A`));
    assert.ok(!listed.stdout.includes(secret));
    assert.match((await runCli(['keys', 'list'], env)).stdout, new RegExp(`${keyRowId}\\tapi\\tactive\\t.*mobile`));

    assert.equal((await runCli(['credentials', 'revoke', keyId], env)).code, 0);
    assert.equal((await runCli(['credentials', 'revoke', 'sk_unknown'], env)).code, 1);
    assert.equal((await runCli(['keys', 'revoke', keyRowId], env)).code, 0);
    assert.equal((await runCli(['keys', 'revoke', randomUUID()], env)).code, 1);
    assert.match((await runCli(['credentials', 'list'], env)).stdout, /revoked \d{4}-/);

    const after = await openStore({ dataDir: dir });
    try {
      assert.equal(await after.credentials.verify(keyId, secret), null);
      assert.deepEqual(await after.apiKeys.activeDigests(), []);
    } finally {
      await after.close();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
