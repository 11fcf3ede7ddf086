// The HTTP front on worker threads (CATCOMFORT_HTTP_THREADS=2) answers exactly as the front on the
// main thread does: the same raw requests (HTTP/1.1 and 1.0, keep-alive, the front's own refusals,
// unknown methods on routes added after the port opened) get the same bytes back from both, but
// for request ids, dates and timings; the threads report their answers to the access log and
// their pool and V8 heaps to /metrics; shutdown waits for a request in progress; the port stays exclusive.
// Every request goes over the threads' links to the main thread (src/front/service-link.ts): the
// cases below cover them (HTTP/1.0, pipelining, a body in pieces, errors, a client that leaves),
// and its bodies lent in memory shared with the main thread (body-slab.ts): many at once, of
// different photos, each answered for its own photo, and every lent byte back once they are answered.
// Their access lines come with the answers and are written by the threads: the same line as the
// main thread writes, once per request, whole, from two threads at once.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { oipBinaryRequest } from '../bench/protocols';
import { parseMetrics, total } from './helpers/metrics';
import { photo } from './helpers/paths';
import { atLeast, normalized, responses, talk } from './helpers/raw-http';
import { startServer, TEST_KEY, type TestServer } from './helpers/server';
import { waitFor } from './helpers/wait';

const K = `api-key: ${TEST_KEY}\r\n`;
const cat = readFileSync(photo('007_oxford_Siamese_151.jpg')).toString('base64');
const body = JSON.stringify({ image: cat });

let one: TestServer;
let two: TestServer;
before(async () => {
  [one, two] = await Promise.all([startServer({ CATCOMFORT_HTTP_THREADS: '1' }), startServer({ CATCOMFORT_HTTP_THREADS: '2' })]);
});
after(() => Promise.all([one?.stop(), two?.stop()]));

const CASES: Array<{ name: string; pieces: string[]; closes?: boolean; enough?: number }> = [
  { name: 'GET /healthz', pieces: ['GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'] },
  { name: 'HTTP/1.0 without Host', pieces: ['GET /healthz HTTP/1.0\r\n\r\n'], closes: true },
  { name: 'predict', pieces: [`POST /v2/predict HTTP/1.1\r\nHost: x\r\n${K}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`] },
  { name: 'two Content-Length', pieces: ['POST /v2/predict HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}'], closes: true },
  { name: 'unknown method on a pack route', pieces: ['BREW /v2/models/bc-v1/infer HTTP/1.1\r\nHost: x\r\n\r\n'] },
  { name: 'DELETE on a pack route', pieces: ['DELETE /v2/models/bc-v1/infer HTTP/1.1\r\nHost: x\r\n\r\n'] },
  { name: 'HTTP/2.0', pieces: ['GET / HTTP/2.0\r\nHost: x\r\n\r\n'], closes: true },
  { name: 'predict, HTTP/1.0 keep-alive', pieces: [`POST /v2/predict HTTP/1.0\r\nConnection: keep-alive\r\n${K}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`] },
  { name: 'predict, HTTP/1.0', pieces: [`POST /v2/predict HTTP/1.0\r\n${K}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`], closes: true },
  { name: 'predict, head and body apart, a query and a spaced request id', pieces: [`POST /v2/predict?explain=true HTTP/1.1\r\nHost: x\r\n${K}X-Request-ID: \t spaced-id \t\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`, body.slice(0, 5000), body.slice(5000)] },
  { name: 'two predicts pipelined', pieces: [`POST /v2/predict HTTP/1.1\r\nHost: x\r\n${K}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`.repeat(2)], enough: 2 },
  { name: 'predict with a wrong key', pieces: [`POST /v2/predict HTTP/1.1\r\nHost: x\r\napi-key: wrong-key-0123456789\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`] },
  { name: 'predict, malformed JSON', pieces: [`POST /v2/predict HTTP/1.1\r\nHost: x\r\n${K}Content-Type: application/json\r\nContent-Length: 9\r\n\r\n{"image":`] },
  { name: 'POST to no route', pieces: [`POST /v2/nowhere HTTP/1.1\r\nHost: x\r\n${K}Content-Length: 2\r\n\r\n{}`] },
  { name: 'OIP infer, invalid', pieces: [`POST /v2/models/bc-v1/infer HTTP/1.1\r\nHost: x\r\n${K}Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`] },
];

test('the same raw requests get the same answers from the front on two threads as on the main thread', async () => {
  for (const c of CASES) {
    const ask = (port: number) => talk(port, c.pieces, c.closes ? () => false : atLeast(c.enough ?? 1));
    const [a, b] = [await ask(one.port), await ask(two.port)];
    assert.ok(a.text.length > 0, c.name);
    assert.equal(normalized(b.text), normalized(a.text), c.name);
    assert.equal(b.closed, a.closed, c.name);
  }
});

test('keep-alive connections from many clients at once are all answered', async () => {
  const asks = Array.from({ length: 8 }, () =>
    talk(two.port, [`GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n`, `GET /v2/health/ready HTTP/1.1\r\nHost: x\r\n\r\n`], atLeast(2)),
  );
  for (const reply of await Promise.all(asks)) assert.deepEqual(responses(reply.text).map((r) => r.status), [200, 200], reply.text.slice(0, 300));
});

test("the threads' own answers reach the access log with their route; their places reach /metrics", async () => {
  await talk(two.port, ['POST /v2/predict HTTP/1.1\r\nHost: x\r\nX-Request-ID: thread-refusal-1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}'], atLeast(1));
  const line = await waitFor('the access log line', () => two.output().split('\n').find((l) => l.includes('"request_id":"thread-refusal-1"')));
  const record = JSON.parse(line);
  assert.deepEqual([record.status, record.route, record.answered_by, record.client], [400, '/v2/predict', 'front', '127.0.0.1']);
  // A request whose body is still to come holds its place in the service.
  const socket = net.connect(two.port, '127.0.0.1');
  socket.write(`POST /v2/predict HTTP/1.1\r\nHost: x\r\n${K}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n{`);
  const open = await waitFor('a reported place in use', async () => {
    const metrics = parseMetrics(await (await fetch(`${two.url}/metrics`, { headers: { 'api-key': TEST_KEY } })).text());
    const n = total(metrics, 'catcomfort_front_upstream', { state: 'open' });
    return n > 0 ? n : null;
  });
  socket.destroy();
  assert.ok(open >= 1);
});

test("the threads' V8 heaps reach /metrics (both threads, used within committed); the front on the main thread has none", async () => {
  const scrape = async (server: TestServer) => parseMetrics(await (await fetch(`${server.url}/metrics`, { headers: { 'api-key': TEST_KEY } })).text());
  const heap = (metrics: ReturnType<typeof parseMetrics>, state: string) => total(metrics, 'catcomfort_front_threads_heap_bytes', { state });
  const metrics = await scrape(two);
  // Each thread reports once it starts: two heaps of at least 1 MiB each.
  assert.ok(heap(metrics, 'total') >= 2 * 1024 * 1024, String(heap(metrics, 'total')));
  assert.ok(heap(metrics, 'used') > 0 && heap(metrics, 'used') <= heap(metrics, 'total'));
  assert.equal((await scrape(one)).filter((s) => s.name === 'catcomfort_front_threads_heap_bytes').length, 0);
});

test('a client that leaves while its body arrives is logged as on the main thread, and the service goes on', async () => {
  const leave = async (server: TestServer, id: string) => {
    const socket = net.connect(server.port, '127.0.0.1');
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(`POST /v2/predict HTTP/1.1\r\nHost: x\r\n${K}X-Request-ID: ${id}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 100)}`);
    await waitFor('the request in progress', async () => {
      const metrics = parseMetrics(await (await fetch(`${server.url}/metrics`, { headers: { 'api-key': TEST_KEY } })).text());
      return total(metrics, 'catcomfort_http_requests_in_flight') >= 2;
    });
    socket.destroy();
    const line = await waitFor('its access log line', () => server.output().split('\n').find((l) => l.includes(`"request_id":"${id}"`)));
    return JSON.parse(line) as Record<string, unknown>;
  };
  const [a, b] = [await leave(one, 'leaves-main'), await leave(two, 'leaves-threads')];
  for (const key of ['status', 'route', 'bytes_in', 'bytes_out']) assert.equal(b[key], a[key], key);
  assert.equal(b.status, 'client_closed');
  const after = await talk(two.port, [CASES[2]!.pieces[0]!], atLeast(1));
  assert.equal(responses(after.text)[0]?.status, 200);
});

test("bodies lent by the threads at once, of different photos, each get their own photo's answer, and all come back", async () => {
  const photos = ['007_oxford_Siamese_151.jpg', '000_skimage_chelsea.png', '070_darknet_dog.jpg', '041_ggoni_cats_couch.jpg'].map((name) => readFileSync(photo(name)));
  const ask = async (port: number, photoBytes: Buffer, oip: boolean) => {
    const request = oip
      ? { path: '/v2/models/bc-v1/infer', ...oipBinaryRequest(photoBytes) }
      : { path: '/v2/predict', headers: { 'content-type': 'application/json' }, body: Buffer.from(JSON.stringify({ image: photoBytes.toString('base64') })) };
    const response = await fetch(`http://127.0.0.1:${port}${request.path}`, { method: 'POST', headers: { ...request.headers, 'api-key': TEST_KEY }, body: new Uint8Array(request.body) });
    assert.equal(response.status, 200);
    return normalized(await response.text());
  };
  const asks = Array.from({ length: 24 }, (_, i) => ({ photo: photos[i % photos.length]!, oip: i % 3 === 2 }));
  const expected = await Promise.all(asks.map((a) => ask(one.port, a.photo, a.oip)));
  for (let round = 0; round < 2; round++) {
    const got = await Promise.all(asks.map((a) => ask(two.port, a.photo, a.oip)));
    for (let i = 0; i < asks.length; i++) assert.equal(got[i], expected[i], `request ${i}, round ${round}`);
  }
  const metrics = parseMetrics(await (await fetch(`${two.url}/metrics`, { headers: { 'api-key': TEST_KEY } })).text());
  assert.equal(total(metrics, 'catcomfort_http_direct_lent_bytes'), 0);
});

test("a direct request's access line, written by its thread, is the main thread's line, once per request and whole", async () => {
  const linesOf = (server: TestServer, id: string) =>
    server
      .output()
      .split('\n')
      .filter((l) => l.includes(`"request_id":"${id}"`))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  const ask = async (server: TestServer, id: string, oip: boolean) => {
    const request = oip ? { path: '/v2/models/bc-v1/infer', ...oipBinaryRequest(readFileSync(photo('007_oxford_Siamese_151.jpg'))) } : { path: '/v2/predict', headers: { 'content-type': 'application/json' }, body: Buffer.from(body) };
    const response = await fetch(`${server.url}${request.path}`, { method: 'POST', headers: { ...request.headers, 'api-key': TEST_KEY, 'x-request-id': id }, body: new Uint8Array(request.body) });
    assert.equal(response.status, 200);
    await response.arrayBuffer();
  };
  for (const oip of [false, true]) {
    await Promise.all([ask(one, `line-one-${oip}`, oip), ask(two, `line-two-${oip}`, oip)]);
    const [a] = await waitFor('the main thread\'s line', () => linesOf(one, `line-one-${oip}`).length ? linesOf(one, `line-one-${oip}`) : null);
    const [b] = await waitFor('the thread\'s line', () => linesOf(two, `line-two-${oip}`).length ? linesOf(two, `line-two-${oip}`) : null);
    assert.deepEqual(Object.keys(b!), Object.keys(a!));
    const same = (r: Record<string, unknown>) => ({ ...r, request_id: 'ID', time: 'T', latency_ms: 0 });
    assert.deepEqual(same(b!), same(a!));
  }
  const ids = Array.from({ length: 32 }, (_, i) => `line-many-${i}`);
  await Promise.all(ids.map((id, i) => ask(two, id, i % 2 === 1)));
  await waitFor('a line for every request', () => ids.every((id) => linesOf(two, id).length > 0) || null);
  await ask(two, 'line-last', false);
  await waitFor('the last line', () => linesOf(two, 'line-last').length > 0 || null);
  for (const id of ids) assert.equal(linesOf(two, id).length, 1, id);
});

test('a second instance on the same port fails to start; SIGTERM waits for a request in progress', async () => {
  const second = await startServer({ CATCOMFORT_HTTP_THREADS: '2', CATCOMFORT_PORT: String(two.port) }, { waitReady: false }).catch((error: Error) => error);
  assert.ok(second instanceof Error, 'the second instance started');
  // The head goes first: the service holds the request while the body is still to come.
  const socket = net.connect(two.port, '127.0.0.1');
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  socket.write(`POST /v2/predict HTTP/1.1\r\nHost: x\r\n${K}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 100)}`);
  await waitFor('the request in progress', async () => {
    const metrics = parseMetrics(await (await fetch(`${two.url}/metrics`, { headers: { 'api-key': TEST_KEY } })).text());
    return total(metrics, 'catcomfort_http_requests_in_flight') >= 2;
  });
  const stopped = two.stop();
  await waitFor('shutting down', () => two.output().includes('"msg":"shutting down"'));
  socket.end(body.slice(100));
  await stopped;
  assert.match(text, /^HTTP\/1\.1 200 /);
  assert.equal(two.child.exitCode, 0, two.output().slice(-2000));
});
