// CATCOMFORT_BENCH_FREE_MODEL (benchmarks only): after warm-up every analysis answers the warm-up
// photo's result without running the networks, the start log says so, and the HTTP and batching
// around it stay the same (request ids, errors before the model). The server runs the front on two
// threads with a short idle limit, for a body that stalls on its way to the main thread.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { photo } from './helpers/paths';
import { startServer, TEST_KEY, type TestServer } from './helpers/server';
import { waitFor } from './helpers/wait';

let free: TestServer;
before(async () => {
  free = await startServer({ CATCOMFORT_BENCH_FREE_MODEL: 'true', CATCOMFORT_HTTP_THREADS: '2', CATCOMFORT_CLIENT_IDLE_TIMEOUT_MS: '1000' });
});
after(() => free?.stop());

const predict = (file: string) =>
  fetch(`${free.url}/v2/predict`, {
    method: 'POST',
    headers: { 'api-key': TEST_KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ image: readFileSync(photo(file)).toString('base64') }),
  });

test('every photo gets the warm-up photo\'s answer, and the start log warns', async () => {
  const answers = await Promise.all(['007_oxford_Siamese_151.jpg', '000_skimage_chelsea.png'].map(async (file) => (await predict(file)).json()));
  for (const answer of answers) assert.equal(answer.detection, 'detected');
  // The two photos differ in size (the Siamese is 333 x 500); the free model answers both with the warm-up photo's.
  assert.notDeepEqual(answers[0].image, { width: 333, height: 500 });
  assert.deepEqual(answers[0].image, answers[1].image);
  assert.deepEqual(answers[0].cat, answers[1].cat);
  assert.notEqual(answers[0].request_id, answers[1].request_id);
  assert.match(free.output(), /CATCOMFORT_BENCH_FREE_MODEL is on/);
});

test('what is refused before the model is refused as always', async () => {
  const response = await fetch(`${free.url}/v2/predict`, { method: 'POST', headers: { 'api-key': TEST_KEY, 'content-type': 'application/json' }, body: '{}' });
  assert.equal(response.status, 422);
});

test('a body that stalls on its way from the threads is cut after the idle limit and logged as its client leaving', async () => {
  const socket = net.connect(free.port, '127.0.0.1');
  await new Promise((resolve) => socket.once('connect', resolve));
  const closed = new Promise((resolve) => socket.once('close', resolve));
  socket.on('error', () => undefined);
  socket.write(`POST /v2/predict HTTP/1.1\r\nHost: x\r\napi-key: ${TEST_KEY}\r\nX-Request-ID: stalled-body\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"image":"`);
  await closed;
  const line = await waitFor('its access log line', () => free.output().split('\n').find((l) => l.includes('"request_id":"stalled-body"')));
  assert.deepEqual([JSON.parse(line).status, JSON.parse(line).bytes_in], ['client_closed', 10]);
});
