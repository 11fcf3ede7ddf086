// The HTTP front's pool of connections to the server behind it, against a scripted server on a
// unix socket standing in for uWS: a bodiless GET whose connection closes before it was read is
// sent again once, a POST is not; past the pool and its queue the front answers 429 itself; a place
// held without a connection (the direct way) counts toward the limit as a connection does.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { TrustedProxies } from '../src/http/front/client-address';
import { HttpFront } from '../src/http/front/front';
import { type Upstream, UpstreamPool } from '../src/http/front/upstream-pool';
import { errorResponse } from '../src/http/error-answers';
import { responses, talk } from './helpers/raw-http';

const OK = 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok';
let dir: string;
let upstream: net.Server;
/** What the scripted server does with each request head it reads, in order of arrival. */
let script: Array<(socket: net.Socket) => void> = [];
const held: net.Socket[] = [];

async function front(connections: number, queue: number): Promise<{ port: number; front: HttpFront }> {
  const f = new HttpFront({
    upstreamPath: path.join(dir, 'up.sock'),
    upstreamConnections: connections,
    upstreamQueue: queue,
    upstreamWaitMs: 10_000,
    trustedProxies: new TrustedProxies([]),
    maxBodyBytes: 1024,
    idleTimeoutMs: 10_000,
    allowedMethods: () => ['GET', 'POST'],
    rendererFor: () => errorResponse,
  });
  return { port: await f.listen('127.0.0.1', 0), front: f };
}

before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'cc-pool-'));
  upstream = net.createServer((socket) => {
    socket.on('data', (chunk: Buffer) => {
      if (chunk.includes('\r\n\r\n')) (script.shift() ?? ((s: net.Socket) => s.write(OK)))(socket);
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => upstream.listen(path.join(dir, 'up.sock'), resolve));
});
after(() => {
  upstream.close();
  rmSync(dir, { recursive: true, force: true });
});

test('a GET whose connection closes before it is read is sent again; a POST is not', async () => {
  const { port, front: f } = await front(4, 4);
  script = [(s) => s.destroy()];
  const get = await talk(port, ['GET /x HTTP/1.1\r\nHost: x\r\n\r\n'], (t) => responses(t).length >= 1);
  assert.deepEqual(responses(get.text).map((r) => r.status), [200]);
  script = [(s) => s.destroy()];
  const post = await talk(port, ['POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi']);
  assert.deepEqual([post.closed, post.text], [true, ''], 'the client sees the connection close, as from the server itself');
  f.close();
  await f.drain(1000);
});

test('one connection and a queue of one: the second request waits, the third gets 429 with Retry-After', async () => {
  const { port, front: f } = await front(1, 1);
  script = [(s) => held.push(s)];
  const first = talk(port, ['GET /a HTTP/1.1\r\nHost: x\r\n\r\n'], (t) => responses(t).length >= 1);
  const second = talk(port, ['GET /b HTTP/1.1\r\nHost: x\r\n\r\n'], (t) => responses(t).length >= 1);
  const waitForQueue = async () => {
    while (f.upstream.waiting < 1 || held.length < 1) await new Promise((resolve) => setImmediate(resolve));
  };
  await waitForQueue();
  const third = await talk(port, ['GET /c HTTP/1.1\r\nHost: x\r\n\r\n'], (t) => responses(t).length >= 1);
  const [refused] = responses(third.text);
  assert.equal(refused!.status, 429);
  assert.equal(refused!.headers.get('retry-after'), '1');
  assert.equal(JSON.parse(refused!.body).error.code, 'overloaded');
  held.shift()!.write(OK);
  assert.deepEqual([...responses((await first).text), ...responses((await second).text)].map((r) => r.status), [200, 200]);
  assert.deepEqual(f.upstream, { open: 1, idle: 1, waiting: 0 });
  f.close();
  await f.drain(1000);
});

test('a place held without a connection counts as one: the next request waits, and gets a connection in it once it is given back', () => {
  const pool = new UpstreamPool(path.join(dir, 'up.sock'), { connections: 1, queue: 1, waitMs: 10_000 });
  assert.equal(pool.hasPlace(), true);
  pool.takePlace();
  assert.equal(pool.hasPlace(), false);
  let granted: Upstream | null = null;
  assert.notEqual(pool.acquire((u) => (granted = u), () => assert.fail('expired')), null);
  assert.deepEqual(pool.counts, { open: 0, idle: 0, waiting: 1 });
  assert.equal(pool.acquire(() => assert.fail('granted past the queue'), () => undefined), null, 'the queue of one is full');
  pool.givePlace();
  assert.ok(granted, 'the waiter got a connection');
  assert.deepEqual(pool.counts, { open: 1, idle: 0, waiting: 0 });
  assert.equal(pool.hasPlace(), false, 'its connection holds the place now');
  pool.release(granted);
  assert.equal(pool.hasPlace(), true, 'an idle connection holds no place');
  pool.closeIdle();
});
