// With the HTTP front on the main thread (CATCOMFORT_HTTP_THREADS=1), requests go to the service over
// the link within the thread (src/front/local-link.ts): a POST with a Content-Length body gets the same
// answer, byte for byte but for ids, dates and timings, as the same request sent chunked (read whole
// by the front first), with the same access line; and every byte of the bodies it lends comes back,
// and every place is free, once the requests are answered.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { oipBinaryRequest } from '../bench/protocols';
import { parseMetrics, total } from './helpers/metrics';
import { photo } from './helpers/paths';
import { atLeast, normalized, talk } from './helpers/raw-http';
import { startServer, TEST_KEY, type TestServer } from './helpers/server';
import { waitFor } from './helpers/wait';

const K = `api-key: ${TEST_KEY}\r\n`;
const siamese = readFileSync(photo('007_oxford_Siamese_151.jpg'));
const predictBody = Buffer.from(JSON.stringify({ image: siamese.toString('base64') }));
const oip = oipBinaryRequest(siamese);

let server: TestServer;
before(async () => {
  server = await startServer({ CATCOMFORT_HTTP_THREADS: '1' });
});
after(() => server?.stop());

const CASES: Array<{ name: string; path: string; fields: string; body: Buffer }> = [
  { name: 'predict', path: '/v2/predict', fields: `${K}Content-Type: application/json\r\n`, body: predictBody },
  { name: 'predict with a wrong key', path: '/v2/predict', fields: 'api-key: wrong-key-0123456789\r\nContent-Type: application/json\r\n', body: predictBody },
  { name: 'predict, malformed JSON', path: '/v2/predict', fields: `${K}Content-Type: application/json\r\n`, body: Buffer.from('{"image":') },
  { name: 'OIP binary infer', path: '/v2/models/bc-v1/infer', fields: `${K}Content-Type: application/octet-stream\r\nInference-Header-Content-Length: ${oip.headers['inference-header-content-length']}\r\n`, body: oip.body },
  { name: 'POST to no route', path: '/v2/nowhere', fields: K, body: Buffer.from('{}') },
];

/** The request with its body as Content-Length or chunked. */
function request(c: (typeof CASES)[number], id: string, chunked: boolean): Buffer {
  const framing = chunked ? 'Transfer-Encoding: chunked\r\n' : `Content-Length: ${c.body.length}\r\n`;
  const head = Buffer.from(`POST ${c.path} HTTP/1.1\r\nHost: x\r\nX-Request-ID: ${id}\r\n${c.fields}${framing}\r\n`, 'latin1');
  if (!chunked) return Buffer.concat([head, c.body]);
  return Buffer.concat([head, Buffer.from(`${c.body.length.toString(16)}\r\n`), c.body, Buffer.from('\r\n0\r\n\r\n')]);
}

function lineOf(id: string): Record<string, unknown> {
  const line = server.output().split('\n').find((l) => l.includes(`"request_id":"${id}"`));
  return line ? (JSON.parse(line) as Record<string, unknown>) : {};
}

test('a POST with a Content-Length body gets the answer and the access line the same request gets chunked', async () => {
  for (const [i, c] of CASES.entries()) {
    const direct = await talk(server.port, [request(c, `direct-${i}`, false)], atLeast(1));
    const relayed = await talk(server.port, [request(c, `chunkd-${i}`, true)], atLeast(1));
    assert.ok(direct.text.startsWith('HTTP/1.1 '), c.name);
    assert.equal(normalized(direct.text).replaceAll(`direct-${i}`, 'RID'), normalized(relayed.text).replaceAll(`chunkd-${i}`, 'RID'), c.name);
    const [a, b] = await Promise.all([`direct-${i}`, `chunkd-${i}`].map((id) => waitFor(`the line of ${id}`, () => (lineOf(id).status !== undefined ? lineOf(id) : null))));
    const same = (r: Record<string, unknown>) => ({ ...r, request_id: 'ID', time: 'T', latency_ms: 0 });
    assert.deepEqual(same(a!), same(b!), c.name);
  }
});

test('POSTs at once: their bodies all come back and their places are free once answered', async () => {
  const fresh = await startServer({ CATCOMFORT_HTTP_THREADS: '1' });
  try {
    const replies = await Promise.all(Array.from({ length: 8 }, (_, i) => talk(fresh.port, [request(CASES[i % 2 === 0 ? 0 : 3]!, `many-${i}`, false)], atLeast(1))));
    for (const reply of replies) assert.match(reply.text, /^HTTP\/1\.1 200 /);
    const metrics = parseMetrics(await (await fetch(`${fresh.url}/metrics`, { headers: { 'api-key': TEST_KEY } })).text());
    // The scrape itself holds the one place in use.
    assert.equal(total(metrics, 'catcomfort_front_upstream', { state: 'open' }), 1);
    assert.equal(total(metrics, 'catcomfort_http_direct_lent_bytes'), 0);
  } finally {
    await fresh.stop();
  }
});
