// An HTTP client whose connection is reset before its answer is logged and counted as
// `client_closed`, wherever its request was: held by the front waiting for a connection to the
// service (the front reports it, `answered_by: "front"`), or at the service, its images being
// analysed and queued (the service reports it when the front's connection to it closes). A plain
// close is taken as a half-close and still answered (client-connection.ts), so the clients here reset. The service
// runs one image at a time over one front connection, held busy by an Open Inference Protocol call
// of slow photos; each stage is waited for on the metrics port, which is not behind the front.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { request } from './helpers/http';
import { parseMetrics, total, type Sample } from './helpers/metrics';
import { encodeRgbPng } from './helpers/png';
import { startServer, TEST_KEY, type TestServer } from './helpers/server';
import { waitFor } from './helpers/wait';

const slow = encodeRgbPng(3000, 3000, Buffer.alloc(3000 * 3000 * 3, 128)).toString('base64'); // many pixels to decode, few bytes to send
const small = encodeRgbPng(64, 64, Buffer.alloc(64 * 64 * 3, 200)).toString('base64'); // a body the front reads whole while it holds the request

let server: TestServer;
let metricsPort: number;

before(async () => {
  server = await startServer({
    CATCOMFORT_BATCH_MAX_SIZE: '1',
    CATCOMFORT_BATCH_IN_FLIGHT: '1',
    CATCOMFORT_UPSTREAM_CONNECTIONS: '1',
    CATCOMFORT_METRICS_PORT: '0',
  });
  const listening = server.output().split('\n').find((l) => l.includes('"msg":"listening"'))!;
  metricsPort = JSON.parse(listening).metrics_port;
});

after(async () => {
  await server?.stop();
});

async function scrape(): Promise<Sample[]> {
  return parseMetrics((await request(`http://127.0.0.1:${metricsPort}/metrics`, { key: null })).text);
}

/** Opens a connection and sends a JSON POST on it; the socket is the test's to close. */
function post(path: string, id: string, body: unknown): net.Socket {
  const json = Buffer.from(JSON.stringify(body));
  const socket = net.connect(server.port, '127.0.0.1');
  socket.on('error', () => undefined);
  socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\napi-key: ${TEST_KEY}\r\nX-Request-ID: ${id}\r\nContent-Type: application/json\r\nContent-Length: ${json.length}\r\n\r\n`);
  socket.write(json);
  return socket;
}

async function logged(id: string): Promise<Record<string, any>> {
  const line = await waitFor(`the request line of ${id}`, () =>
    server.output().split('\n').find((l) => l.includes(`"request_id":"${id}"`) && l.includes('"msg":"request"')),
  );
  return JSON.parse(line);
}

test('a client reset while its request waits in the front, and one reset while its images are analysed: client_closed, each counted once', async () => {
  const start = await scrape();
  const closed = (samples: Sample[], route: string) => total(samples, 'catcomfort_http_requests_total', { route, status: 'client_closed' });
  // A micro-batch is counted when it is dispatched to the pipeline.
  const started = (samples: Sample[]) => total(samples, 'catcomfort_batch_size_count', { model: 'bc-v1' });

  const images = 24;
  const analysed = post('/v2/models/bc-v1/infer', 'http-gone-analysing', { inputs: [{ name: 'image', datatype: 'BYTES', shape: [images], data: Array(images).fill(slow) }] });
  await waitFor('its first image analysed, the others queued', async () => started(await scrape()) > started(start));

  const held = post('/v2/predict', 'http-gone-front', { image: small });
  await waitFor('the second request waiting in the front', async () => total(await scrape(), 'catcomfort_front_upstream', { state: 'waiting' }) === 1);
  held.resetAndDestroy();
  const front = await logged('http-gone-front');
  assert.deepEqual([front.status, front.answered_by, front.route, front.bytes_out], ['client_closed', 'front', '/v2/predict', 0]);

  analysed.resetAndDestroy();
  const service = await logged('http-gone-analysing');
  assert.deepEqual([service.status, service.answered_by, service.route], ['client_closed', undefined, '/v2/models/:model_id/infer']);

  const now = await scrape();
  assert.equal(closed(now, '/v2/predict') - closed(start, '/v2/predict'), 1);
  assert.equal(closed(now, '/v2/models/:model_id/infer') - closed(start, '/v2/models/:model_id/infer'), 1);
  assert.ok(started(now) - started(start) < images, 'the analysis was still under way when the client left');
});
