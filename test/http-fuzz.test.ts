// 10,000 adversarial requests against the real service, seeded so a failure can be replayed: mutated
// request lines, versions, fields, framing and bodies, cut short or sent whole, 64 connections at a
// time. No answer may be a 5xx other than 501 (unknown method) and 505 (HTTP version), and the
// service must still be healthy afterwards.
import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import { seededRandom } from '../src/train/evaluate';
import { startServer, TEST_KEY } from './helpers/server';

const REQUESTS = 10_000;
const PARALLEL = 64;

type Random = () => number;
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

const METHODS = ['GET', 'POST', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'TRACE', 'CONNECT', 'PROPFIND', 'get', 'G ET', '', 'POST\0'];
const TARGETS = ['/v2/predict', '/v2/models', '/v2/models/bc-v1/predict', '/invocations', '/ping', '/scan', '/scan/x', '/healthz', '/readyz', '/metrics', '*', 'http://x/ping', '/%00', '/v2/predict?x=%ZZ', `/${'a'.repeat(5000)}`, '/..%2f..%2fetc', ''];
const VERSIONS = ['HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.2', 'HTTP/0.9', 'HTTP/11', 'http/1.1', ''];
const FIELDS = [
  'Host: x',
  'Host: a\r\nHost: b',
  `api-key: ${TEST_KEY}`,
  'api-key: wrong-key-0123456789',
  'Content-Type: application/json',
  'Content-Type: text/plain',
  'Content-Length: 5',
  'Content-Length: -1',
  'Content-Length: 99999999999999999999',
  'Content-Length: 3\r\nContent-Length: 4',
  'Transfer-Encoding: chunked',
  'Transfer-Encoding: gzip, chunked',
  'Transfer-Encoding: chunked, chunked',
  'Expect: 100-continue',
  'Connection: close',
  'Connection: keep-alive',
  'X-Forwarded-For: 1.2.3.4, garbage',
  'Forwarded: for="[::1', 'catcomfort-peer-address: 6.6.6.6',
  'X-Request-ID: ' + 'r'.repeat(300),
  ' folded: value',
  'No-Colon',
  'Bad\x01Field: v',
  `X-Big: ${'b'.repeat(40_000)}`,
  'api-secret: ss_AAAA\r\napi-key: sk_000000000000000000000000',
];
const BODIES = ['', 'hello', '{"image":"AAAA"}', '{"image":', '{"image":"not base64!"}', '5\r\nhello\r\n0\r\n\r\n', 'zz\r\nxx\r\n', '{"url":"http://127.0.0.1:1/x"}', '\0\0\0', '[]', '{"image":"' + 'A'.repeat(2000) + '"}'];

const VALID = [
  'GET /healthz HTTP/1.1\r\nHost: x\r\n',
  `GET /v2/models HTTP/1.1\r\nHost: x\r\napi-key: ${TEST_KEY}\r\n`,
  'GET /ping HTTP/1.0\r\n',
  `POST /v2/predict HTTP/1.1\r\nHost: x\r\napi-key: ${TEST_KEY}\r\nContent-Type: application/json\r\nContent-Length: 16\r\n`,
];

function adversarialRequest(random: Random): Buffer {
  if (random() < 0.3) {
    // A valid request with one more field, maybe a hostile one.
    const extra = random() < 0.5 ? `${pick(random, FIELDS)}\r\n` : '';
    const base = pick(random, VALID);
    return Buffer.from(`${base}${extra}\r\n${base.startsWith('POST') ? '{"image":"AAAA"}' : ''}`, 'latin1');
  }
  if (random() < 0.05) return Buffer.from(Array.from({ length: 1 + Math.floor(random() * 600) }, () => Math.floor(random() * 256)));
  const fields = Array.from({ length: Math.floor(random() * 6) }, () => pick(random, FIELDS));
  let text = `${pick(random, METHODS)} ${pick(random, TARGETS)} ${pick(random, VERSIONS)}\r\n${fields.map((f) => `${f}\r\n`).join('')}\r\n${pick(random, BODIES)}`;
  if (random() < 0.1) text = text.replace(/\r\n/g, '\n');
  if (random() < 0.15) text = text.slice(0, Math.floor(random() * text.length));
  return Buffer.from(text, 'latin1');
}

/** Sends `bytes`, half-closes, and collects every status line until the service closes. */
function exchange(port: number, bytes: Buffer): Promise<number[]> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    let text = '';
    socket.on('connect', () => socket.end(bytes));
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve([...text.matchAll(/(?:^|\n)HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]))));
    socket.setTimeout(30_000, () => socket.destroy());
  });
}

test(`${REQUESTS} adversarial requests: no 5xx but 501 and 505, and the service stays healthy`, async (t) => {
  const server = await startServer();
  t.after(() => server.stop());
  const random = seededRandom(20261125);
  const requests = Array.from({ length: REQUESTS }, () => adversarialRequest(random));
  const counts = new Map<number, number>();
  const bad: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < requests.length) {
      const index = next++;
      for (const status of await exchange(server.port, requests[index]!)) {
        counts.set(status, (counts.get(status) ?? 0) + 1);
        if (status >= 500 && status !== 501 && status !== 505) bad.push(`#${index} ${status}: ${JSON.stringify(requests[index]!.toString('latin1').slice(0, 200))}`);
      }
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
  t.diagnostic(`answers by status: ${JSON.stringify(Object.fromEntries([...counts].sort((a, b) => a[0] - b[0])))}`);
  assert.deepEqual(bad.slice(0, 20), []);
  assert.ok((counts.get(200) ?? 0) > 0 && (counts.get(400) ?? 0) > 0, 'the mix reaches both valid and refused answers');
  assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
  assert.equal(server.child.exitCode, null, 'the service is still running');
});
