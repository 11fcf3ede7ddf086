// Operating the service: /healthz, /readyz (before readiness, ready, draining), the 503 answers
// before readiness, Prometheus /metrics moved by real requests, the access log, the Grafana
// dashboard's queries, malloc trims, the pool of image-sized blocks, and start-up messages (unknown variables, an unusable database URL).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { postJson, request } from './helpers/http';
import { metricNames, parseMetrics, total, type Sample } from './helpers/metrics';
import { photo, repoRoot } from './helpers/paths';
import { startServer, TEST_KEY, type TestServer } from './helpers/server';
import { waitFor } from './helpers/wait';

const CAT = '000_skimage_chelsea.png';
const catImage = readFileSync(photo(CAT)).toString('base64');

function tmpDir(): string {
  return mkdtempSync(path.join(os.tmpdir(), 'cc-ops-'));
}

async function scrape(url: string, key: string | null = TEST_KEY): Promise<{ text: string; samples: Sample[] }> {
  const response = await request(`${url}/metrics`, { key });
  assert.equal(response.status, 200, response.text);
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return { text: response.text, samples: parseMetrics(response.text) };
}

/** The JSON log lines of `output` (other lines skipped). */
function logLines(output: string): Array<Record<string, any>> {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, any>);
}

/** A kept-alive raw connection: requests written one by one, answers counted as they arrive. */
class RawConnection {
  private readonly socket: net.Socket;
  text = '';
  closed = false;

  constructor(port: number) {
    this.socket = net.connect(port, '127.0.0.1');
    this.socket.on('data', (chunk: Buffer) => (this.text += chunk.toString('latin1')));
    this.socket.on('close', () => (this.closed = true));
    this.socket.on('error', () => undefined);
  }

  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  /** Waits until `count` status lines have arrived; returns the text from the last one on. */
  async answer(count: number): Promise<string> {
    const starts = () => [...this.text.matchAll(/HTTP\/1\.1 \d{3}/g)].map((m) => m.index!);
    await waitFor(`answer ${count}`, () => starts().length >= count && /\r\n\r\n/.test(this.text.slice(starts()[count - 1]!)), { timeoutMs: 30_000 });
    return this.text.slice(starts()[count - 1]!);
  }

  destroy(): void {
    this.socket.destroy();
  }
}

describe('a ready service', () => {
  let server: TestServer;

  before(async () => {
    server = await startServer({ CATCOMFORT_DATA_DIR: tmpDir(), CATCOMFORT_SCAN_WORKERS: '0', CATCOMFORT_MALLOC_TRIM_INTERVAL_MS: '200' });
  });
  after(() => server.stop());

  test('/healthz and /readyz answer without a key; /readyz names every pack ready', async () => {
    const health = await request(`${server.url}/healthz`, { key: null });
    assert.equal(health.status, 200);
    assert.deepEqual(health.body, { status: 'alive' });
    const ready = await request(`${server.url}/readyz`, { key: null });
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.body, {
      status: 'ready',
      models: { 'bc-legacy': 'ready', 'bc-v1': 'ready' },
      versions: { 'bc-legacy': { '1.0.0': 'serving' }, 'bc-v1': { '1.3.0': 'serving' } },
      scans: 'ok',
    });
  });

  test('the ready log line names the URL of /v2/docs, which answers', async () => {
    const ready = logLines(server.output()).find((l) => l.msg === 'ready');
    assert.ok(ready, server.output());
    assert.equal(ready.url, `http://127.0.0.1:${server.port}/v2/docs`);
    assert.equal((await request(ready.url as string, { key: null })).status, 200);
  });

  test("malloc's free pages are given back every CATCOMFORT_MALLOC_TRIM_INTERVAL_MS, counted in /metrics and named in the ready line", async () => {
    const ready = logLines(server.output()).find((l) => l.msg === 'ready');
    assert.equal(ready?.malloc?.trim_interval_ms, 200, server.output());
    assert.equal(ready?.malloc?.cpu_arena, false, 'ONNX Runtime\'s CPU arena is off by default');
    const samples = await waitFor('two trims', async () => {
      const { samples } = await scrape(server.url);
      return total(samples, 'catcomfort_malloc_trims_total') >= 2 && samples;
    });
    assert.ok(total(samples, 'catcomfort_malloc_trim_seconds_total') > 0);
    assert.ok(samples.some((s) => s.name === 'catcomfort_malloc_trim_released_bytes_total'));
    assert.ok(samples.some((s) => s.name === 'catcomfort_external_collections_seconds_total'), 'the time in full collections is counted');
  });

  test('image-sized blocks are taken from the pool and reused by the next request, counted in /metrics', async () => {
    const before = (await scrape(server.url)).samples;
    // Four in a row: a trim every 200 ms may unmap the blocks between two of them, not between all.
    for (let i = 0; i < 4; i++) assert.equal((await postJson(`${server.url}/v2/predict`, { image: catImage })).status, 200);
    const after = (await scrape(server.url)).samples;
    const grew = (name: string) => total(after, name) - total(before, name);
    // Each request takes at least its base64-decoded file, its decoded photo and a resized view.
    assert.ok(grew('catcomfort_image_blocks_taken_total') >= 12, `taken: ${grew('catcomfort_image_blocks_taken_total')}`);
    assert.ok(grew('catcomfort_image_blocks_reused_total') >= 3, `reused: ${grew('catcomfort_image_blocks_reused_total')}`);
    assert.ok(after.some((s) => s.name === 'catcomfort_image_blocks_bytes' && s.labels.state === 'idle'));
  });

  test('/metrics needs the key by default', async () => {
    const refused = await request(`${server.url}/metrics`, { key: null });
    assert.equal(refused.status, 401);
    assert.equal((await request(`${server.url}/metrics`, { key: 'wrong-key-0123456789abc' })).status, 401);
    await scrape(server.url);
  });

  test('one v2 prediction moves the request counter, the latency, stage and batch-size histograms', async () => {
    const before = (await scrape(server.url)).samples;
    const response = await postJson(`${server.url}/v2/predict`, { image: catImage });
    assert.equal(response.status, 200, response.text);
    assert.equal(response.body.detection, 'detected');
    const after = (await scrape(server.url)).samples;
    const delta = (name: string, labels: Record<string, string>) => total(after, name, labels) - total(before, name, labels);

    assert.equal(delta('catcomfort_http_requests_total', { interface: 'v2', route: '/v2/predict', model: 'bc-v1', status: '200' }), 1);
    assert.equal(delta('catcomfort_http_request_duration_seconds_count', { interface: 'v2', route: '/v2/predict' }), 1);
    assert.ok(delta('catcomfort_http_request_duration_seconds_sum', { interface: 'v2', route: '/v2/predict' }) > 0);
    for (const stage of ['read', 'queue', 'decode', 'detect', 'crop', 'classify', 'loop', 'convert']) {
      assert.equal(delta('catcomfort_stage_duration_seconds_count', { model: 'bc-v1', stage }), 1, stage);
    }
    assert.equal(delta('catcomfort_batch_size_count', { model: 'bc-v1' }), 1);
    assert.equal(delta('catcomfort_batch_size_sum', { model: 'bc-v1' }), 1);
    assert.equal(delta('catcomfort_stage_duration_seconds_count', { model: 'bc-legacy' }), 0, 'the other pack saw nothing');
    // The scrape itself is counted once it is answered: the first one shows in the second.
    assert.equal(delta('catcomfort_http_requests_total', { interface: 'ops', route: '/metrics', status: '200' }), 1);

    assert.equal(total(after, 'catcomfort_ready'), 1);
    assert.equal(total(after, 'catcomfort_execution_provider', { provider: 'cpu' }), 1);
    assert.equal(total(after, 'catcomfort_queue_depth', { model: 'bc-v1' }), 0);
    assert.equal(total(after, 'catcomfort_scan_queue_depth', { state: 'pending' }), 0);
    assert.ok(total(after, 'process_resident_memory_bytes') > 0);
  });

  test('a 401 and an unknown path are counted with their status and route', async () => {
    const before = (await scrape(server.url)).samples;
    assert.equal((await postJson(`${server.url}/v2/predict`, { image: catImage }, {}, null)).status, 401);
    assert.equal((await request(`${server.url}/v2/nothing-here`)).status, 404);
    const after = (await scrape(server.url)).samples;
    const delta = (labels: Record<string, string>) => total(after, 'catcomfort_http_requests_total', labels) - total(before, 'catcomfort_http_requests_total', labels);
    assert.equal(delta({ interface: 'v2', route: '/v2/predict', status: '401' }), 1);
    assert.equal(delta({ interface: 'v2', route: 'unmatched', status: '404' }), 1);
  });

  test('one access-log line per request, with its outcome and without the image or the key', async () => {
    const v2 = await postJson(`${server.url}/v2/predict`, { image: catImage }, { 'X-Request-ID': 'ops-log-v2' });
    assert.equal(v2.status, 200);
    const v1 = await postJson(`${server.url}/invocations`, { media_type: 'image', media_data: { image: catImage } }, { 'X-Request-ID': 'ops-log-v1' });
    assert.equal(v1.status, 200);
    const lines = await waitFor('both access-log lines', () => {
      const found = logLines(server.output()).filter((l) => l.msg === 'request' && String(l.request_id).startsWith('ops-log-'));
      return found.length === 2 ? found : null;
    });
    const [lineV2, lineV1] = [lines.find((l) => l.request_id === 'ops-log-v2')!, lines.find((l) => l.request_id === 'ops-log-v1')!];
    assert.equal(lineV2.level, 'info');
    assert.equal(lineV2.interface, 'v2');
    assert.equal(lineV2.method, 'POST');
    assert.equal(lineV2.route, '/v2/predict');
    assert.equal(lineV2.model, 'bc-v1');
    assert.equal(lineV2.status, 200);
    assert.equal(lineV2.detection, 'detected');
    assert.equal(lineV2.bytes_in, JSON.stringify({ image: catImage }).length);
    assert.equal(lineV2.bytes_out, Buffer.byteLength(v2.text));
    assert.ok(lineV2.latency_ms > 0);
    assert.equal(lineV1.interface, 'v1');
    assert.equal(lineV1.route, '/invocations');
    assert.equal(lineV1.model, 'bc-v1');
    assert.equal(lineV1.detection, 'detected');
    assert.ok(!server.output().includes(TEST_KEY), 'the key is never logged');
    assert.ok(!server.output().includes(catImage.slice(0, 64)), 'the image is never logged');
  });

  test('every metric the Grafana dashboard queries is in a scrape', async () => {
    const dashboard = JSON.parse(readFileSync(path.join(repoRoot, 'ops/grafana/catcomfort-dashboard.json'), 'utf8')) as { panels: Array<{ targets?: Array<{ expr: string }> }> };
    const exprs = dashboard.panels.flatMap((p) => p.targets ?? []).map((t) => t.expr);
    assert.ok(exprs.length >= 10, `${exprs.length} queries`);
    const functions = new Set(['sum', 'rate', 'by', 'histogram_quantile', 'le', 'max', 'increase', 'without', 'avg', 'irate', 'on', 'time']);
    const names = metricNames((await scrape(server.url)).text);
    for (const expr of exprs) {
      // Metric names: identifiers not followed by `(` or `=`/`!=`/`=~` (labels) and not PromQL words.
      const used = [...expr.replace(/\{[^}]*\}/g, '').replace(/\[[^\]]*\]/g, '').matchAll(/[a-z_][a-z0-9_]*/g)].map((m) => m[0]).filter((w) => !functions.has(w) && w.includes('_'));
      assert.ok(used.length > 0, expr);
      for (const name of used) assert.ok(names.has(name), `${name} (in ${expr}) is not in the scrape`);
    }
  });

  test('shutting down: /readyz answers 503 draining while a request is still in progress, which is answered', async () => {
    const body = Buffer.from(JSON.stringify({ image: catImage }));
    const probe = new RawConnection(server.port);
    probe.write('GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n');
    assert.match(await probe.answer(1), /^HTTP\/1\.1 200/);
    const upload = new RawConnection(server.port);
    upload.write(`POST /v2/predict HTTP/1.1\r\nHost: x\r\napi-key: ${TEST_KEY}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
    upload.write(body.subarray(0, 1000));
    // The scrape is in flight too: 2 means the upload's request has reached the service.
    await waitFor('the upload in flight', async () => total((await scrape(server.url)).samples, 'catcomfort_http_requests_in_flight') >= 2);
    server.child.kill('SIGTERM');
    await waitFor('the shutting-down line', () => server.output().includes('"msg":"shutting down"'));
    probe.write('GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n');
    const draining = await probe.answer(2);
    assert.match(draining, /^HTTP\/1\.1 503/);
    assert.deepEqual(JSON.parse(draining.slice(draining.indexOf('\r\n\r\n') + 4)), {
      status: 'draining',
      models: { 'bc-legacy': 'draining', 'bc-v1': 'draining' },
      versions: { 'bc-legacy': { '1.0.0': 'serving' }, 'bc-v1': { '1.3.0': 'serving' } },
      scans: 'ok',
    });
    upload.write(body.subarray(1000));
    assert.match(await upload.answer(1), /^HTTP\/1\.1 200/);
    await server.stop();
    assert.equal(server.child.exitCode, 0, server.output());
    probe.destroy();
    upload.destroy();
  });
});

describe('before readiness', () => {
  // A PostgreSQL stand-in that accepts connections and never answers: start-up waits on the store,
  // before the packs load, for as long as the test needs.
  const sockets: net.Socket[] = [];
  const silent = net.createServer((socket) => {
    socket.on('error', () => undefined);
    sockets.push(socket);
  });
  let server: TestServer;
  let metricsPort: number;

  before(async () => {
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const dbPort = (silent.address() as net.AddressInfo).port;
    server = await startServer(
      {
        CATCOMFORT_DATA_DIR: tmpDir(),
        CATCOMFORT_DATABASE_URL: `postgres://cat:hunter2-secret@127.0.0.1:${dbPort}/scans`,
        CATCOMFORT_METRICS: 'open',
        CATCOMFORT_METRICS_PORT: '0',
        CATCOMFORT_API_KEY: 'misspelt-0123456789abcdef',
      },
      { waitReady: false },
    );
    metricsPort = logLines(server.output()).find((l) => l.msg === 'listening')!.metrics_port as number;
    await waitFor('the service to connect to the database', () => sockets.length > 0);
  });
  after(async () => {
    await server.stop();
    silent.close();
  });

  test('/healthz answers 200 and /readyz 503 with every pack loading', async () => {
    assert.equal((await request(`${server.url}/healthz`, { key: null })).status, 200);
    const ready = await request(`${server.url}/readyz`, { key: null });
    assert.equal(ready.status, 503);
    assert.equal(ready.headers.get('retry-after'), '5');
    assert.deepEqual(ready.body, { status: 'starting', models: { 'bc-legacy': 'loading', 'bc-v1': 'loading' } });
  });

  test('requests get 503 in their interface format, with Retry-After', async () => {
    const v2 = await postJson(`${server.url}/v2/predict`, { image: catImage }, { 'X-Request-ID': 'early-1' });
    assert.equal(v2.status, 503);
    assert.equal(v2.headers.get('retry-after'), '5');
    assert.equal(v2.body.error.code, 'unavailable');
    assert.equal(v2.body.request_id, 'early-1');
    const scan = await postJson(`${server.url}/scan`, { image: catImage });
    assert.equal(scan.status, 503);
    assert.equal(scan.body.error.code, 'unavailable');
    const v1 = await postJson(`${server.url}/invocations`, { image: catImage });
    assert.equal(v1.status, 503);
    assert.equal(v1.headers.get('retry-after'), '5');
    assert.deepEqual(v1.body, { detail: 'Service Unavailable' });
    // The Open Inference Protocol's paths in its shape, though its model routes are not added yet.
    const oip = await postJson(`${server.url}/v2/models/bc-v1/infer`, { inputs: [] }, { 'X-Request-ID': 'early-2' });
    assert.equal(oip.status, 503);
    assert.equal(oip.headers.get('retry-after'), '5');
    assert.deepEqual([oip.body.code, typeof oip.body.error, oip.body.request_id], ['unavailable', 'string', 'early-2']);
    assert.deepEqual((await request(`${server.url}/v2/health/ready`, { key: null })).body, { ready: false });
  });

  test('CATCOMFORT_METRICS=open: /metrics without a key on the service port and on CATCOMFORT_METRICS_PORT', async () => {
    const open = await scrape(server.url, null);
    assert.equal(total(open.samples, 'catcomfort_ready'), 0);
    const separate = await scrape(`http://127.0.0.1:${metricsPort}`, null);
    assert.equal(total(separate.samples, 'catcomfort_ready'), 0);
    assert.equal((await request(`http://127.0.0.1:${metricsPort}/readyz`, { key: null })).status, 404);
  });

  test('an unknown CATCOMFORT_ variable is warned about, naming the closest known one', async () => {
    const warning = await waitFor('the warning', () => logLines(server.output()).find((l) => l.variable === 'CATCOMFORT_API_KEY'));
    assert.equal(warning.level, 'warn');
    assert.equal(warning.closest, 'CATCOMFORT_API_KEYS');
    assert.match(warning.msg as string, /CATCOMFORT_API_KEY .*did you mean CATCOMFORT_API_KEYS/);
  });

  test('the database going away fails start-up naming CATCOMFORT_DATABASE_URL, not its password', async () => {
    for (const socket of sockets) socket.destroy();
    await waitFor('the service to exit', () => server.child.exitCode !== null);
    await server.stop();
    assert.equal(server.child.exitCode, 1);
    assert.match(server.output(), /Start-up failed: CATCOMFORT_DATABASE_URL: cannot use the PostgreSQL database at 127\.0\.0\.1:\d+\/scans/);
    assert.ok(!server.output().includes('hunter2-secret'));
  });
});

test('a database URL nothing answers on stops start-up naming CATCOMFORT_DATABASE_URL', async () => {
  const closed = net.createServer();
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = (closed.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const result = spawnSync(process.execPath, [path.join(repoRoot, 'dist/src/main.js')], {
    env: { ...process.env, CATCOMFORT_HOST: '127.0.0.1', CATCOMFORT_PORT: '0', CATCOMFORT_API_KEYS: TEST_KEY, CATCOMFORT_DATABASE_URL: `postgres://cat:pw-not-shown@127.0.0.1:${port}/scans` },
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(result.status, 1, result.stderr);
  assert.match(result.stderr, /CATCOMFORT_DATABASE_URL: cannot use the PostgreSQL database at 127\.0\.0\.1:\d+\/scans: .*ECONNREFUSED/);
  assert.ok(!result.stderr.includes('pw-not-shown'));
});
