// Places for requests in the service (src/front/places.ts), on a real front on 127.0.0.1 serving a
// router whose handler holds its requests: with one place and a queue of one, the second request
// waits, the third gets 429 with Retry-After from the front, and the waiter is served once the place
// is given back; a wait past the limit is refused, and a waiter that leaves the queue frees it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadConfig } from '../src/config';
import { Places } from '../src/front/places';
import { HttpServer } from '../src/front/server';
import type { Exchange } from '../src/http/exchange';
import { Router } from '../src/http/router';
import { renderV1Error } from '../src/v1/errors';
import { responses, talk } from './helpers/raw-http';
import { waitFor } from './helpers/wait';

test('one place and a queue of one: the second request waits, the third gets 429 with Retry-After, the second is served once the first is answered', async () => {
  const held: Exchange[] = [];
  const router = new Router(renderV1Error);
  router.add('GET', '/hold', (ex) => void held.push(ex));
  router.add('GET', '/now', (ex) => ex.send(200, { 'Content-Type': 'text/plain' }, 'now'));
  const { front, requestTimeoutMs } = loadConfig({});
  const http = new HttpServer(router, { maxBodyBytes: 1024, front: { ...front, httpThreads: 1, upstreamConnections: 1, upstreamQueue: 1 }, upstreamWaitMs: requestTimeoutMs });
  const port = await http.listen('127.0.0.1', 0);
  try {
    const first = talk(port, ['GET /hold HTTP/1.1\r\nHost: x\r\n\r\n'], (t) => responses(t).length >= 1);
    await waitFor('the first request in the service', () => held.length === 1 || null);
    const second = talk(port, ['GET /now HTTP/1.1\r\nHost: x\r\n\r\n'], (t) => responses(t).length >= 1);
    await waitFor('the second request waiting for a place', () => http.upstream.waiting === 1 || null);
    const [refused] = responses((await talk(port, ['GET /now HTTP/1.1\r\nHost: x\r\n\r\n'], (t) => responses(t).length >= 1)).text);
    assert.equal(refused!.status, 429);
    assert.equal(refused!.headers.get('retry-after'), '1');
    assert.deepEqual(http.upstream, { open: 1, idle: 0, waiting: 1 });
    held[0]!.send(200, { 'Content-Type': 'text/plain' }, 'held');
    assert.deepEqual([...responses((await first).text), ...responses((await second).text)].map((r) => r.body), ['held', 'now']);
    await waitFor('every place free', () => http.upstream.open === 0 || null);
    assert.deepEqual(http.upstream, { open: 0, idle: 0, waiting: 0 });
  } finally {
    http.stopListening();
    await http.drain(5_000);
  }
});

test('a wait past the limit expires; a waiter that leaves frees its place in the queue', async () => {
  const places = new Places({ places: 1, queue: 1, waitMs: 1 });
  places.acquire(() => undefined, () => assert.fail('the first has a place'));
  await new Promise<void>((resolve) => places.acquire(() => assert.fail('no place was given back'), resolve));
  assert.deepEqual(places.counts, { open: 1, idle: 0, waiting: 0 }, 'the expired waiter left the queue');
  const long = new Places({ places: 1, queue: 1, waitMs: 60_000 });
  long.acquire(() => undefined, () => undefined);
  const leave = long.acquire(() => assert.fail('it left'), () => assert.fail('it left'));
  assert.equal(long.acquire(() => undefined, () => undefined), null, 'the queue of one is full');
  leave!();
  assert.deepEqual(long.counts, { open: 1, idle: 0, waiting: 0 });
  long.give();
  assert.deepEqual(long.counts, { open: 0, idle: 0, waiting: 0 });
});
