// The live stream (GET /v2/stream, src/stream/, docs/api-v2.md "Live stream") on the real service with
// the real bc-v1 pack, through the HTTP front on the main thread and on two threads: a settings message
// with the key first, then photos as binary frames answered as /v2/predict answers them; newest frame
// first when frames come faster than they are analysed (skipped + analysed = sent, every answer for a
// frame no older than one analysis plus one frame interval when it was chosen); bad input answered or
// closed with its documented code while HTTP keeps being served.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { photo, photosDir } from './helpers/paths';
import { ffmpegJpeg } from './helpers/phone-jpeg';
import { runClientScript } from './helpers/python-client';
import { startServer, TEST_KEY, type TestServer } from './helpers/server';
import { keyedStream, StreamClient } from './helpers/stream-client';
import { waitFor } from './helpers/wait';

const CAT = readFileSync(path.join(photosDir, '007_oxford_Siamese_151.jpg'));
/** The service's resident memory now (/proc), in bytes. */
function rssOf(server: TestServer): number {
  const kib = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${server.child.pid}/status`, 'utf8'))![1]!;
  return Number(kib) * 1024;
}

/** Whether `client` has closed, waiting at most `ms`. */
async function closedWithin(client: StreamClient, ms: number): Promise<boolean> {
  return Promise.race([client.closed.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms))]);
}

/** A 12 MP phone-size photo of a cat: slower to analyse than a frame interval at 30 a second on one pool thread. */
const PHONE_CAT = ffmpegJpeg(photo('000_skimage_chelsea.png'), 'scale=4000:3000');

let one: TestServer;
let two: TestServer;
before(async () => {
  [one, two] = await Promise.all([
    startServer({ CATCOMFORT_HTTP_THREADS: '1', CATCOMFORT_POOL_THREADS: '1', CATCOMFORT_MAX_BODY_BYTES: String(4 * 1024 * 1024), CATCOMFORT_STREAM_MAX_CONNECTIONS: '1100', CATCOMFORT_STREAM_MAX_BUFFERED_BYTES: '16384' }),
    startServer({ CATCOMFORT_HTTP_THREADS: '2' }),
  ]);
});
after(() => Promise.all([one?.stop(), two?.stop()]));

for (const threads of [1, 2]) {
  test(`with the front on ${threads === 1 ? 'the main thread' : 'two threads'}, a photo sent as a frame is answered as /v2/predict answers it`, { timeout: 120_000 }, async () => {
    const server = threads === 1 ? one : two;
    const client = await keyedStream(server.url);
    client.socket.send(CAT);
    const [, answer] = await client.received(2);
    const http = (await (
      await fetch(`${server.url}/v2/predict`, { method: 'POST', headers: { 'api-key': TEST_KEY, 'content-type': 'application/json' }, body: JSON.stringify({ image: CAT.toString('base64') }) })
    ).json()) as Record<string, unknown>;
    assert.equal(answer!.type, 'result');
    assert.equal(answer!.seq, 1);
    assert.equal(answer!.skipped, 0);
    for (const member of ['model', 'detection', 'prediction', 'cat', 'image']) assert.deepEqual(answer![member], http[member], member);
    assert.equal(typeof (answer!.timings as Record<string, number>).total, 'number');
    client.socket.close(1000);
    assert.equal((await client.closed).code, 1000);
  });
}

test('30 frames a second (or faster) for 10 s, faster than they are analysed: the newest is analysed next, the others skipped and counted', { timeout: 120_000 }, async () => {
  const client = await keyedStream(one.url);
  // Two frames first, the second's analysis (warm) for the time one takes here: frames then come at least three times as fast.
  client.socket.send(PHONE_CAT);
  await client.received(2);
  client.socket.send(PHONE_CAT);
  const first = (await client.received(3))[2];
  client.messages.length = 1;
  const frameMs = Math.min(1000 / 30, (first!.timings as { total: number }).total / 3);
  const frames = Math.round(10_000 / frameMs);
  const start = performance.now();
  let rssAfter2s = 0;
  for (let i = 0; i < frames; i++) {
    if (performance.now() - start >= 2000 && rssAfter2s === 0) rssAfter2s = rssOf(one);
    client.socket.send(PHONE_CAT);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, start + (i + 1) * frameMs - performance.now())));
  }
  // The last frame sent is always answered: it waits or runs until it is.
  const messages = await new Promise<Array<Record<string, unknown>>>((resolve) => {
    const check = () => (client.messages.at(-1)?.seq === frames + 2 || client.socket.readyState === client.socket.CLOSED ? resolve(client.messages) : void client.received(client.messages.length + 1).then(check));
    check();
  });
  const grown = rssOf(one) - rssAfter2s;
  assert.ok(grown < 32 * 1024 * 1024, `the service's memory stays flat: +${(grown / 1024 / 1024).toFixed(1)} MiB from second 2 to the end`);
  const results = messages.slice(1);
  const analysed = results.length;
  const skipped = results.reduce((sum, m) => sum + (m.skipped as number), 0);
  assert.ok(results.every((m) => m.type === 'result'));
  assert.ok(analysed < frames, `fewer analysed (${analysed}) than sent`);
  assert.equal(analysed + skipped, frames, 'every frame is analysed or skipped, and counted once');
  for (let i = 1; i < results.length; i++) assert.ok((results[i]!.seq as number) > (results[i - 1]!.seq as number), 'answers come in frame order');
  // When its analysis began, each frame had waited at the service no longer than one analysis plus
  // one frame interval (waited_ms, the service's own clock: this client's is busy sending).
  const analysisMs = Math.max(...results.map((m) => (m.timings as { total: number }).total));
  for (const m of results) {
    assert.ok((m.waited_ms as number) <= analysisMs + frameMs, `frame ${m.seq as number} had waited ${m.waited_ms as number} ms when chosen (one analysis: ${analysisMs.toFixed(0)} ms)`);
  }
  client.socket.close(1000);
  await client.closed;
});

test('bad input: each gets its documented answer or close code, and HTTP keeps being served', { timeout: 120_000 }, async () => {
  const garbage = await keyedStream(one.url);
  garbage.socket.send('not json {');
  const [, error] = await garbage.received(2);
  assert.equal(error!.type, 'error');
  assert.equal(error!.seq, null);
  assert.equal((error!.error as { code: string }).code, 'invalid_request');
  garbage.socket.send(Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7919) % 256)));
  const [, , bad] = await garbage.received(3);
  assert.equal(bad!.type, 'error');
  assert.equal(bad!.seq, 1);
  assert.equal((bad!.error as { code: string }).code, 'invalid_image');
  assert.equal(bad!.skipped, 0);
  garbage.socket.send(JSON.stringify({ model: 'no-such-pack' }));
  const [, , , unknown] = await garbage.received(4);
  assert.equal((unknown!.error as { code: string }).code, 'model_not_found');
  garbage.socket.send(CAT);
  const [, , , , fine] = await garbage.received(5);
  assert.equal(fine!.type, 'result', 'the stream survives a bad frame and a bad setting');
  assert.equal((fine!.model as { id: string }).id, 'bc-v1', 'the settings stayed as they were');
  garbage.socket.send(Buffer.alloc(4 * 1024 * 1024 + 1));
  // 1009 when the close frame reaches the client; one still sending may find the connection reset first (1006).
  assert.ok([1009, 1006].includes((await garbage.closed).code));

  const noKey = new StreamClient(one.url);
  await noKey.opened;
  noKey.socket.send(CAT);
  assert.equal((await noKey.closed).code, 4001);
  const wrongKey = new StreamClient(one.url);
  await wrongKey.opened;
  wrongKey.socket.send(JSON.stringify({ api_key: 'not-the-key-0123456789' }));
  assert.equal((await wrongKey.closed).code, 4001);

  const plain = await fetch(`${one.url}/v2/stream`);
  assert.equal(plain.status, 400, 'a GET without the upgrade is told what the path is');
  assert.match(((await plain.json()) as { error: { message: string } }).error.message, /WebSocket/);
  const health = await fetch(`${one.url}/healthz`);
  assert.equal(health.status, 200);
});

test('a client that never reads is closed (4008) once its unread answers pass the limit', { timeout: 120_000 }, async () => {
  const reader = await keyedStream(one.url);
  reader.socket.pause();
  // Settings messages are answered at once, without an analysis: enough of them fill every buffer on the way.
  const settings = JSON.stringify({ threshold: 0.5 });
  while (reader.socket.readyState === reader.socket.OPEN && reader.socket.bufferedAmount < 64 * 1024 * 1024) {
    for (let i = 0; i < 1000; i++) reader.socket.send(settings);
    await new Promise((resolve) => setImmediate(resolve));
    if (await closedWithin(reader, 0)) break;
  }
  reader.socket.resume();
  // The close frame waits behind the unread answers: a client that reads nothing may see the connection end without it (1006).
  assert.ok([4008, 1006].includes((await reader.closed).code));
  await waitFor('the stream access line with close code 4008', () => one.output().includes('"close_code":4008'), { timeoutMs: 10_000 });
  assert.equal((await fetch(`${one.url}/healthz`)).status, 200);
});

test('the Python client (clients/python/catcomfort_stream.py) streams a photo, a bad frame and a changed threshold', { timeout: 300_000 }, async () => {
  const seen = JSON.parse(await runClientScript('test/stream-client/check.py', [JSON.stringify({ url: two.url, key: TEST_KEY, photo: photo('000_skimage_chelsea.png') })]));
  assert.equal(seen.settings.type, 'settings');
  assert.equal(seen.result.type, 'result');
  assert.equal(seen.result.detection, 'detected');
  assert.equal(seen.bad_frame.type, 'error');
  assert.equal(seen.bad_frame.error.code, 'invalid_image');
  assert.equal(seen.changed.threshold, 0.9);
  assert.equal(seen.after_change.prediction.threshold, 0.9);
  assert.match(seen.refused, /threshold/);
  assert.equal(seen.wrong_key, 4001);
});

test('1,000 idle connections are held, and HTTP keeps being served', { timeout: 120_000 }, async () => {
  // Keyed, so they are held until the idle timeout (60 s), not closed after the 10 s a key may take.
  const settled = await Promise.allSettled(Array.from({ length: 1000 }, () => keyedStream(one.url)));
  const failed = settled.flatMap((r) => (r.status === 'rejected' ? [String(r.reason)] : []));
  assert.deepEqual([...new Set(failed)], [], `${failed.length} of 1,000 streams did not open`);
  const clients = settled.map((r) => (r as PromiseFulfilledResult<StreamClient>).value);
  const answer = await fetch(`${one.url}/v2/predict`, { method: 'POST', headers: { 'api-key': TEST_KEY, 'content-type': 'application/json' }, body: JSON.stringify({ image: CAT.toString('base64') }) });
  assert.equal(answer.status, 200);
  const metrics = await (await fetch(`${one.url}/metrics`, { headers: { 'api-key': TEST_KEY } })).text();
  const open = Number(metrics.split('\n').find((line) => line.startsWith('catcomfort_streams_open '))?.split(' ')[1]);
  assert.ok(open >= 1000, `catcomfort_streams_open ${open}: every stream counted (those of earlier tests may still be closing)`);
  for (const c of clients) c.socket.terminate();
});
