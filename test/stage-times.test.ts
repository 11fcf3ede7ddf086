// Where the time goes (src/timing/stage-times.ts, docs/performance.md "Where the time goes"): every v1, v2 and
// OIP answer of the real service carries a Server-Timing header whose stages add up to the
// request's time; /v2/stats shows the batching in effect and each stage's summary; /metrics has
// every stage. The stage arithmetic is checked on injected times too.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { analysisTimes, RequestTiming, serverTimingHeader } from '../src/timing/stage-times';
import { gcShareOf } from '../src/ops/event-loop';
import { loopCells, loopFigures } from '../src/cli/stage-scrape';
import { postJson, request } from './helpers/http';
import { parseMetrics, total } from './helpers/metrics';
import { photo } from './helpers/paths';
import { startServer, type TestServer } from './helpers/server';

let server: TestServer;
const cat = readFileSync(photo('000_skimage_chelsea.png')).toString('base64');

before(async () => {
  server = await startServer();
});

after(async () => {
  await server.stop();
});

/** The Server-Timing header's stages, in milliseconds. */
function serverTiming(headers: Headers): Record<string, number> {
  const value = headers.get('server-timing');
  assert.ok(value, 'a Server-Timing header');
  return Object.fromEntries(
    value.split(',').map((part) => {
      const match = /^\s*([a-z]+);dur=(\d+\.\d{3})$/.exec(part);
      assert.ok(match, `a name;dur=ms metric: "${part}"`);
      return [match[1]!, Number(match[2])];
    }),
  );
}

/** The analysed answer's stages: all eight, adding up to total within 10 %, total within what the client waited. */
function assertAddsUp(stages: Record<string, number>, clientMs: number): void {
  assert.deepEqual(Object.keys(stages), ['read', 'queue', 'decode', 'detect', 'crop', 'classify', 'loop', 'convert', 'total']);
  const { total: totalMs, ...rest } = stages;
  const sum = Object.values(rest).reduce((s, v) => s + v, 0);
  assert.ok(Math.abs(sum - totalMs!) <= 0.1 * totalMs!, `stages ${JSON.stringify(rest)} sum to ${sum} ms, total ${totalMs} ms`);
  assert.ok(totalMs! <= clientMs, `total ${totalMs} ms within the client's ${clientMs} ms`);
  assert.ok(stages.detect! > 0 && stages.classify! > 0 && stages.decode! > 0, 'the native stages ran');
}

test('v2, v1 and OIP REST answers carry Server-Timing stages that add up to the request', async () => {
  const calls: Array<[string, unknown]> = [
    ['/v2/predict', { image: cat }],
    ['/invocations', { media_type: 'image', media_data: { image: cat } }],
    ['/v2/models/bc-v1/infer', { inputs: [{ name: 'image', datatype: 'BYTES', shape: [1], data: [cat] }] }],
  ];
  for (const [path, body] of calls) {
    const started = performance.now();
    const response = await postJson(`${server.url}${path}`, body);
    const clientMs = performance.now() - started;
    assert.equal(response.status, 200, `${path}: ${response.text}`);
    assertAddsUp(serverTiming(response.headers), clientMs);
  }
});

test('an answer without an analysis has only total: a 401, a 422 and a health check', async () => {
  const refused = await postJson(`${server.url}/v2/predict`, { image: cat }, {}, null);
  assert.equal(refused.status, 401);
  assert.deepEqual(Object.keys(serverTiming(refused.headers)), ['total']);
  const invalid = await postJson(`${server.url}/v2/predict`, { image: cat, threshold: 2 });
  assert.equal(invalid.status, 422);
  assert.deepEqual(Object.keys(serverTiming(invalid.headers)), ['total']);
  const health = await request(`${server.url}/healthz`, { key: null });
  assert.deepEqual(Object.keys(serverTiming(health.headers)), ['total']);
});

test('/v2/stats: the batching in effect (CPU rule), every stage summarised, the event loop; /metrics: every stage, the loop, and a scrape of named metrics', async () => {
  const before = (await request(`${server.url}/v2/stats`)).body.models['bc-v1'];
  assert.equal((await postJson(`${server.url}/v2/predict`, { image: cat })).status, 200);
  const stats = (await request(`${server.url}/v2/stats`)).body.models['bc-v1'];
  assert.deepEqual(stats.batching, { maxBatchSize: 4, maxQueueDelayUs: 500, maxQueue: 64, maxInFlight: 2, poolThreads: stats.batching.poolThreads, chosenBy: 'cpu rule' });
  assert.ok(stats.batching.poolThreads >= 1);
  const loop = (await request(`${server.url}/v2/stats`)).body.eventLoop;
  assert.equal(loop.windowS, 10);
  assert.ok(loop.busySeconds > 0 && loop.mainThreadCpuSeconds > 0 && loop.requests >= 3, JSON.stringify(loop));
  // Loading and warming the packs allocates enough for the collector to have run on the main thread.
  assert.ok(loop.gcSeconds > 0 && loop.gcSeconds < loop.mainThreadCpuSeconds, JSON.stringify(loop));
  for (const stage of ['read', 'queue', 'decode', 'detect', 'crop', 'classify', 'loop', 'convert']) {
    const s = stats.stages[stage];
    assert.equal(s.count, (before.stages[stage]?.count ?? 0) + 1, stage);
    assert.ok(s.p50Ms <= s.p99Ms && s.meanMs >= 0, stage);
  }
  const metrics = parseMetrics((await request(`${server.url}/metrics`)).text);
  for (const stage of ['read', 'queue', 'decode', 'detect', 'crop', 'classify', 'loop', 'convert']) {
    assert.ok(total(metrics, 'catcomfort_stage_duration_seconds_count', { model: 'bc-v1', stage }) >= 1, stage);
  }
  assert.ok(total(metrics, 'catcomfort_event_loop_busy_seconds_total') > 0);
  assert.ok(total(metrics, 'catcomfort_main_thread_cpu_seconds_total') > 0);
  assert.ok(total(metrics, 'catcomfort_gc_seconds_total') > 0);
  // Only the metrics named: a cheap scrape for the bench and gpu-check (unknown names left out).
  const named = await request(`${server.url}/metrics?name=catcomfort_event_loop_busy_seconds_total&name=catcomfort_stage_duration_seconds&name=nope`);
  assert.deepEqual([...new Set(parseMetrics(named.text).map((s) => s.name.replace(/_(bucket|sum|count)$/, '')))].sort(), [
    'catcomfort_event_loop_busy_seconds_total',
    'catcomfort_stage_duration_seconds',
  ]);
});

test('the collector\'s share of a window: GC seconds over main-thread CPU seconds, capped at 1, null without CPU time', () => {
  assert.equal(gcShareOf(0.25, 1), 0.25);
  assert.equal(gcShareOf(0.123456, 1), 0.1235);
  assert.equal(gcShareOf(2, 1), 1);
  assert.equal(gcShareOf(0.1, 0), null);
  assert.equal(gcShareOf(0.1, null), null);
  const before = { loopBusyS: 1, mainCpuS: 2, gcS: 0.5 };
  const after = { loopBusyS: 1.5, mainCpuS: 3, gcS: 0.8 };
  assert.deepEqual(loopFigures(before, after, 10, 500), { utilization: 0.05, mainThreadUsPerRequest: 2000, gcShare: 0.3 });
  assert.deepEqual(loopCells({ utilization: 0.05, mainThreadUsPerRequest: 2000, gcShare: 0.3 }), ['5 %', '2000', '30 %']);
  assert.deepEqual(loopCells(null), ['–', '–', '–']);
});

test('stage arithmetic on injected times: one image adds up exactly; several take each stage\'s longest', () => {
  const native = { decodeMs: 3, detectMs: 10, cropMs: 1, classifyMs: 5, analyzeMs: 19 };
  // Submitted at 100, dispatched at 102, back on the loop at 122: 1 ms of the 20 outside the analysis.
  const one = analysisTimes(native, 100, 102, 122);
  assert.deepEqual({ queue: one.queueMs, loop: one.loopMs }, { queue: 2, loop: 1 });
  const timing = new RequestTiming();
  timing.add(one);
  const stages = timing.stages(99.5, 123);
  assert.deepEqual(stages, { read: 0.5, queue: 2, decode: 3, detect: 10, crop: 1, classify: 5, loop: 1, convert: 1, total: 23.5 });
  assert.equal(serverTimingHeader({ read: 0.5, total: 23.5 }), 'read;dur=0.500, total;dur=23.500');
  timing.add(analysisTimes({ ...native, detectMs: 12, analyzeMs: 21 }, 101, 104, 126));
  const two = timing.stages(99.5, 127);
  assert.equal(two.read, 0.5, 'read: until the first image was queued');
  assert.equal(two.queue, 3);
  assert.equal(two.detect, 12);
  assert.equal(two.convert, 1, 'convert: after the last image came back');
  assert.deepEqual(new RequestTiming().stages(10, 12.5), { total: 2.5 });
});

test('Server-Timing durations: milliseconds to the nearest microsecond, always 3 decimals', () => {
  const values = [0, 0.0004, 0.0005, 0.001, 0.0123, 0.5, 0.999, 0.9996, 1, 9.99951, 23.5, 100.0625, 12345.678];
  for (let i = 0; i < 2000; i++) values.push(Math.random() * 10 ** (i % 6));
  for (const ms of values) {
    const written = /^total;dur=(\d+\.\d{3})$/.exec(serverTimingHeader({ total: ms }));
    assert.ok(written, `3 decimals for ${ms}`);
    assert.ok(Math.abs(Number(written[1]) - ms) <= 0.0005 + 1e-9, `${written[1]} for ${ms}`);
  }
  assert.equal(serverTimingHeader({ read: 0.0004, total: 1.0006 }), 'read;dur=0.000, total;dur=1.001');
});
