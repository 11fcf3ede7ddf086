// Three replicas of the real service on one real PostgreSQL behind a real nginx (docs/fleet.md
// "What was tested"). A rolling restart under load: each replica gets SIGTERM, leaves nginx's
// upstream once its /readyz fails (as an endpoints controller takes a pod out; nginx, like
// kube-proxy, does not retry a refused connection), exits, starts again and comes back once ready,
// one at a time, while clients post /v2/predict and read /readyz
// through nginx: every answer 2xx, no connection error. Then kill -9 of a replica holding scans in a
// backlog of 60 with a webhook receiver: every scan completed once, every webhook delivered and never
// sent twice at once, the survivors take the victim's scans within the lease, and the predicts that
// failed through nginx were in flight on the victim. Last, without configured keys, two instances
// on one database accept the one key the first generated.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { freePort } from '../bench/common';
import { photo } from '../test/helpers/paths';
import { startTestPostgres, type TestPostgres } from '../test/helpers/postgres';
import { createCredential, scanHeaders, storeEnv, type Credential } from '../test/helpers/scan';
import { startServer, TEST_KEY, type TestServer } from '../test/helpers/server';
import { startReceiver, type Receiver } from '../test/helpers/webhook-receiver';
import { waitFor } from '../test/helpers/wait';
import { startFleetNginx, type FleetNginx } from './helpers/fleet-nginx';

const REPLICAS = 3;
const LEASE_MS = 3000;
const CAT = JSON.stringify({ image: readFileSync(photo('000_skimage_chelsea.png')).toString('base64') });
const SCAN_BODY = readFileSync(photo('000_skimage_chelsea.png')).toString('base64');

interface Tally {
  statuses: Map<number, number>;
  errors: string[];
}

/** One request on a connection of its own to nginx (nginx reloads close its idle kept-alive connections). */
function request(url: string, method: string, route: string, headers: Record<string, string>, body?: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}${route}`, { method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const send = async (url: string, method: string, route: string, body?: string): Promise<number> =>
  (await request(url, method, route, body === undefined ? { 'api-key': TEST_KEY } : { 'api-key': TEST_KEY, 'content-type': 'application/json' }, body)).status;

/** Client loops until `stop()`: `predicts` posting /v2/predict and one reading /readyz, each tallied. */
function load(url: string, predicts: number): { tally: Tally; stop(): Promise<void> } {
  const tally: Tally = { statuses: new Map(), errors: [] };
  let running = true;
  const loop = async (method: string, route: string, body?: string) => {
    while (running) {
      try {
        const status = await send(url, method, route, body);
        tally.statuses.set(status, (tally.statuses.get(status) ?? 0) + 1);
      } catch (error) {
        tally.errors.push(`${route}: ${(error as Error).message}`);
      }
    }
  };
  const loops = [...Array.from({ length: predicts }, () => loop('POST', '/v2/predict', CAT)), loop('GET', '/readyz')];
  return {
    tally,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

const count = (tally: Tally, accept: (status: number) => boolean) => [...tally.statuses].filter(([s]) => accept(s)).reduce((n, [, c]) => n + c, 0);

describe('three replicas on one PostgreSQL behind nginx', () => {
  let postgres: TestPostgres | null = null;
  let skip = '';
  let env: Record<string, string> = {};
  let ports: number[] = [];
  const replicas: TestServer[] = [];
  let nginx: FleetNginx;
  let db: pg.Pool;

  const startReplica = (i: number) =>
    startServer({
      ...env,
      ...storeEnv(mkdtempSync(path.join(os.tmpdir(), `cc-fleet-${i}-`)), env.CATCOMFORT_DATABASE_URL!),
      CATCOMFORT_PORT: String(ports[i]),
    });

  before(async () => {
    const probe = await startTestPostgres();
    if (!probe.pg) {
      skip = `PostgreSQL not available: ${probe.reason}`;
      return;
    }
    postgres = probe.pg;
    const url = await postgres.createDatabase();
    db = new pg.Pool({ connectionString: url, max: 2 });
    env = {
      CATCOMFORT_DATABASE_URL: url,
      CATCOMFORT_DRAIN_DELAY_MS: '2000',
      CATCOMFORT_POOL_THREADS: '1',
      CATCOMFORT_SCAN_LEASE_MS: String(LEASE_MS),
      CATCOMFORT_FETCH_ALLOW_PRIVATE: 'true',
      CATCOMFORT_WEBHOOK_RETRY_SCHEDULE: '200ms,200ms,200ms',
    };
    ports = await Promise.all(Array.from({ length: REPLICAS }, () => freePort()));
    // One at a time: the first applies the migrations, and three warm-ups at once on two cores take longer than one after another.
    for (let i = 0; i < REPLICAS; i++) replicas.push(await startReplica(i));
    // Like kube-proxy for the restarts: a refused connection is not tried elsewhere.
    nginx = await startFleetNginx(ports, false);
  });

  after(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await nginx?.stop();
    await db?.end();
    await postgres?.stop();
  });

  test('rolling restart under load: every answer through nginx 2xx, no connection error', async (t) => {
    if (!postgres) return t.skip(skip);
    const clients = load(nginx.url, 4);
    try {
      for (let i = 0; i < REPLICAS; i++) {
        const leaving = replicas[i]!;
        const before = count(clients.tally, () => true);
        await waitFor('answers through nginx before the next restart', () => count(clients.tally, () => true) >= before + 5);
        leaving.child.kill('SIGTERM');
        // The endpoints controller: the replica leaves the upstream once its readiness probe fails (503 or no answer).
        await waitFor(`replica ${i} not ready`, async () => (await send(`http://127.0.0.1:${ports[i]}`, 'GET', '/readyz').catch(() => 0)) !== 200);
        await nginx.setUpstreams(ports.filter((_, j) => j !== i));
        // Its own exit after the drain delay (stop() would signal again, which ends the delay).
        if (leaving.child.exitCode === null) await new Promise((resolve) => leaving.child.once('exit', resolve));
        await leaving.stop();
        assert.equal(leaving.child.exitCode, 0, leaving.output());
        replicas[i] = await startReplica(i);
        await nginx.setUpstreams(ports);
      }
      const after = count(clients.tally, () => true);
      await waitFor('answers through nginx after the last restart', () => count(clients.tally, () => true) >= after + 5);
    } finally {
      await clients.stop();
    }
    const { statuses, errors } = clients.tally;
    t.diagnostic(`answers: ${JSON.stringify(Object.fromEntries(statuses))}, connection errors: ${errors.length}`);
    assert.deepEqual(errors, []);
    assert.deepEqual([...statuses.keys()].filter((s) => s < 200 || s > 299), [], JSON.stringify(Object.fromEntries(statuses)));
    assert.ok(count(clients.tally, (s) => s === 200) > 20);
  });

  test('kill -9 of a replica holding scans: each of 60 completed once, every webhook delivered once at a time, taken over within the lease', async (t) => {
    if (!postgres) return t.skip(skip);
    const receiver: Receiver = await startReceiver(() => ({ status: 204, afterMs: 20 }));
    const credential: Credential = createCredential(env, 'fleet');
    const clients = load(nginx.url, 3);
    try {
      // As nginx by default: a refused connection (the killed replica, until it leaves) goes to the next one.
      nginx.retryRefused = true;
      await nginx.setUpstreams(ports);
      const victim = replicas[1]!;
      // Watched from before the first scan is sent: the backlog drains within seconds on three replicas.
      const holding = waitFor('the victim holding scans', async () => {
        const { rows } = await db.query<{ id: string }>(`SELECT id FROM scans WHERE status = 'PROCESSING' AND worker_id LIKE $1`, [`${victim.child.pid}-%`]);
        return rows.length > 0 && rows.map((r) => r.id);
      }, { intervalMs: 10 });
      // As a partner submits: with an Idempotency-Key, sent again if the replica it reached went away (nginx's 502).
      const submit = async (n: number): Promise<string> => {
        // A connection of its own: a kept-alive one may be closed by the reload that takes the victim out.
        const headers = { ...scanHeaders(credential), 'content-type': 'application/json', 'idempotency-key': `fleet-${n}` };
        const response = await request(nginx.url, 'POST', '/scan', headers, JSON.stringify({ image: SCAN_BODY, callbackUrl: `${receiver.url}/hook` }));
        if (response.status === 502) {
          resubmitted += 1;
          return submit(n);
        }
        assert.ok(response.status === 202 || response.status === 200, response.text);
        return (JSON.parse(response.text) as { scanId: string }).scanId;
      };
      let resubmitted = 0;
      const submitting = Promise.all(Array.from({ length: 60 }, (_, n) => submit(n)));
      submitting.catch(() => {}); // reported where it is awaited, after the kill
      const held = await holding;
      const inFlightClients = 3;
      const killedAt = Date.now();
      victim.child.kill('SIGKILL');
      await victim.stop();
      await nginx.setUpstreams(ports.filter((_, j) => j !== 1));
      const ids = await submitting;
      await waitFor('every scan finished', async () => {
        const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM scans WHERE status IN ('COMPLETED', 'FAILED')`);
        return Number(rows[0]!.n) === ids.length;
      }, { timeoutMs: 180_000 });
      const takeoverMs = Date.now() - killedAt;
      await waitFor('every webhook delivered', async () => {
        const { rows } = await db.query<{ n: string }>(`SELECT count(*) AS n FROM webhook_deliveries WHERE state = 'delivered'`);
        return Number(rows[0]!.n) === ids.length;
      }, { timeoutMs: 120_000 });

      const { rows: statuses } = await db.query<{ status: string; n: string }>('SELECT status, count(*) AS n FROM scans GROUP BY status');
      assert.deepEqual(statuses.map((r) => [r.status, Number(r.n)]), [['COMPLETED', 60]]);
      const { rows: completions } = await db.query<{ scan_id: string; n: string }>(`SELECT scan_id, count(*) AS n FROM scan_logs WHERE event = 'completed' GROUP BY scan_id`);
      assert.equal(completions.length, 60);
      assert.deepEqual(completions.filter((r) => Number(r.n) !== 1), []);
      // The victim's scans: claimed again by a survivor once the lease ran out (survivors poll 4 times a second).
      const { rows: claims } = await db.query<{ scan_id: string; at: Date }>(
        `SELECT scan_id, at FROM scan_logs WHERE event = 'claimed' AND scan_id = ANY($1::uuid[]) ORDER BY seq`,
        [held],
      );
      const reclaimMs = held.map((id) => {
        const times = claims.filter((c) => c.scan_id === id).map((c) => c.at.getTime());
        assert.ok(times.length >= 2, `scan ${id} claimed again`);
        return times[times.length - 1]! - times[times.length - 2]!;
      });
      for (const ms of reclaimMs) assert.ok(ms <= LEASE_MS + 2000, `reclaimed ${ms} ms after the victim's claim`);
      // Webhooks: one delivery per scan, never two sends of one id at once.
      const webhookIds = new Set(receiver.received.map((r) => r.headers['webhook-id']));
      assert.equal(webhookIds.size, 60);
      assert.equal(receiver.maxConcurrentPerId(), 1);
      t.diagnostic(`victim held ${held.length} scans; each claimed again ${reclaimMs.join(', ')} ms after its claim (lease ${LEASE_MS} ms); all 60 finished ${takeoverMs} ms after the kill; ${receiver.received.length} webhook requests for 60 ids`);
      // Predicts: only those in flight on the victim failed (502 from nginx, the victim as upstream).
      const victimAddress = `127.0.0.1:${ports[1]}`;
      const failed = nginx.accessLines().filter((l) => l.includes('/v2/predict') && !l.startsWith('200 '));
      t.diagnostic(`failed predicts through nginx: ${failed.length} (${failed.join('; ')}); scan submissions sent again after a 502: ${resubmitted}`);
      assert.ok(failed.length <= inFlightClients, failed.join('\n'));
      for (const line of failed) assert.match(line, new RegExp(`^502 .*${victimAddress.replace(/\./g, '\\.')}`), line);
    } finally {
      await clients.stop();
      await receiver.close();
    }
    assert.deepEqual(clients.tally.errors, []);
  });

  test('without CATCOMFORT_API_KEYS two instances on one database accept the one key the first generated', async (t) => {
    if (!postgres) return t.skip(skip);
    const url = await postgres.createDatabase();
    const start = () => startServer({ ...storeEnv(mkdtempSync(path.join(os.tmpdir(), 'cc-fleet-key-')), url), CATCOMFORT_API_KEYS: '', CATCOMFORT_SCAN_WORKERS: '0' });
    const first = await start();
    const second = await start();
    try {
      const printed = [first, second].flatMap((s) => [...s.output().matchAll(/generated this API key for every instance sharing this database: (\S+)/g)].map((m) => m[1]!));
      assert.equal(printed.length, 1, 'printed once, by the first');
      assert.match(second.output(), /"msg":"no CATCOMFORT_API_KEYS set; the fleet's generated API key is accepted"/);
      for (const server of [first, second]) {
        const answer = (key: string) => fetch(`${server.url}/v2/models`, { headers: { 'api-key': key } }).then((r) => r.status);
        assert.equal(await answer(printed[0]!), 200);
        assert.equal(await answer('not-the-key-0123456789'), 401);
      }
    } finally {
      await Promise.all([first.stop(), second.stop()]);
    }
  });
});
