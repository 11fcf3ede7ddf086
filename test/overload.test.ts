// Overload control through the real server: a burst several times the queue size gets only
// 200s and 429s (with Retry-After), the counters show it, and the service answers normally after.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { postJson, request } from './helpers/http';
import { photo } from './helpers/paths';
import { startServer, type TestServer } from './helpers/server';
import { waitFor } from './helpers/wait';

const image = readFileSync(photo('000_skimage_chelsea.png')).toString('base64');
let server: TestServer;

before(async () => {
  server = await startServer({ CATCOMFORT_QUEUE_MAX: '4', CATCOMFORT_BATCH_MAX_SIZE: '2', CATCOMFORT_BATCH_IN_FLIGHT: '1' });
});
after(() => server.stop());

test('a burst of 10x the queue size gets only 200 and 429, then the service answers normally', async () => {
  const burst = await Promise.all([
    ...Array.from({ length: 30 }, () => postJson(`${server.url}/v2/predict`, { image })),
    ...Array.from({ length: 10 }, () => postJson(`${server.url}/invocations`, { media_data: { image } })),
  ]);
  const statuses = burst.map((r) => r.status);
  assert.ok(statuses.every((s) => s === 200 || s === 429), `unexpected statuses: ${statuses}`);
  const rejected = burst.filter((r) => r.status === 429);
  assert.ok(rejected.length > 0, 'the queue limit was reached');
  assert.ok(statuses.filter((s) => s === 200).length >= 4, 'queued requests were served');
  for (const r of rejected) {
    assert.match(r.headers.get('retry-after')!, /^\d+$/);
    if ('error' in r.body) assert.equal(r.body.error.code, 'overloaded');
    else assert.equal(typeof r.body.detail, 'string');
  }
  const stats = (await request(`${server.url}/v2/stats`)).body.models['bc-v1'];
  assert.equal(stats.rejectedFull, rejected.length);
  assert.equal(stats.queued, 0);
  assert.ok(stats.batchSizes[2] > 0, 'batches of the maximum size formed under load');
  // CPU: one image per session Run, whatever the micro-batch, so nothing is padded.
  for (const stage of ['detector', 'classifier']) {
    const [only, ...more] = stats.sessionBatches[stage];
    assert.deepEqual([only.batch, only.padRows, more.length], [1, 0, 0], stage);
    assert.ok(only.runs > 0, stage);
  }
  assert.deepEqual(stats.hostMemory, { detector: 'cpu', classifier: 'cpu' }, 'no GPU provider: plain CPU memory');
  const after = await postJson(`${server.url}/v2/predict`, { image });
  assert.equal(after.status, 200);
  assert.equal(after.body.detection, 'detected');
});

test('a request that cannot meet its deadline is refused with 429 rather than queued forever', async () => {
  const strict = await startServer({ CATCOMFORT_REQUEST_TIMEOUT_MS: '1', CATCOMFORT_QUEUE_MAX: '100' });
  try {
    const results = await Promise.all(Array.from({ length: 12 }, () => postJson(`${strict.url}/v2/predict`, { image })));
    const statuses = results.map((r) => r.status);
    assert.ok(statuses.every((s) => s === 200 || s === 429), `unexpected statuses: ${statuses}`);
    assert.ok(statuses.includes(429));
    const stats = (await request(`${strict.url}/v2/stats`)).body.models['bc-v1'];
    assert.equal(stats.expired, statuses.filter((s) => s === 429).length);
  } finally {
    await strict.stop();
  }
});

test('SIGTERM drains: requests already queued are answered, then the process exits 0', async () => {
  const server = await startServer();
  const pending = Array.from({ length: 6 }, () => postJson(`${server.url}/v2/predict`, { image }));
  // SIGTERM only once all six have reached the model's queue.
  await waitFor(
    'six requests submitted to the model',
    async () => (await request(`${server.url}/v2/stats`)).body.models['bc-v1'].submitted >= 6,
    { intervalMs: 10 },
  );
  const exited = new Promise<number | null>((resolve) => server.child.once('exit', resolve));
  server.child.kill('SIGTERM');
  const results = await Promise.all(pending);
  assert.deepEqual(results.map((r) => r.status), [200, 200, 200, 200, 200, 200]);
  assert.equal(await exited, 0);
});
