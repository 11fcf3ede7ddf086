// The client address the service keys on and logs: the peer itself, or, from a peer listed in
// CATCOMFORT_TRUSTED_PROXIES, the rightmost untrusted hop of `Forwarded` / `X-Forwarded-For`.
// The rule on its own, its configuration, and the real service's access log, where the front's own
// answers appear too (and in the request metrics).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config';
import { TrustedProxies } from '../src/front/client-address';
import { total, parseMetrics } from './helpers/metrics';
import { responses, talk } from './helpers/raw-http';
import { startServer, TEST_KEY, type TestServer } from './helpers/server';
import { waitFor } from './helpers/wait';

describe('the rule', () => {
  const proxies = new TrustedProxies(['127.0.0.1', '10.0.0.0/8', 'fd00::/8']);

  test('an untrusted peer is the client, whatever it forwards', () => {
    assert.equal(proxies.clientOf('203.0.113.7', 'for=198.51.100.1', '198.51.100.2'), '203.0.113.7');
    assert.equal(new TrustedProxies([]).clientOf('127.0.0.1', undefined, '198.51.100.2'), '127.0.0.1');
  });

  test('from a trusted peer: the rightmost hop that is not a trusted proxy', () => {
    assert.equal(proxies.clientOf('127.0.0.1', undefined, '198.51.100.9, 203.0.113.5, 10.1.2.3'), '203.0.113.5');
    assert.equal(proxies.clientOf('127.0.0.1', undefined, undefined), '127.0.0.1');
    assert.equal(proxies.clientOf('127.0.0.1', undefined, '10.0.0.1, 10.0.0.2'), '10.0.0.1', 'all trusted: the leftmost');
    assert.equal(proxies.clientOf('127.0.0.1', undefined, '203.0.113.5:4711'), '203.0.113.5');
  });

  test('Forwarded wins over X-Forwarded-For; quoted, bracketed and mapped addresses are read', () => {
    assert.equal(proxies.clientOf('127.0.0.1', 'for=198.51.100.1;proto=http, for="[2001:db8::17]:4711"', '203.0.113.5'), '2001:db8::17');
    assert.equal(proxies.clientOf('127.0.0.1', 'For="[::ffff:198.51.100.4]"', undefined), '198.51.100.4');
    assert.equal(proxies.clientOf('::1', undefined, '198.51.100.4'), '::1', '::1 is not listed');
  });

  test('an unreadable hop ends the walk at the last trusted address before it', () => {
    assert.equal(proxies.clientOf('127.0.0.1', 'for=unknown, for=10.0.0.5', undefined), '10.0.0.5');
    assert.equal(proxies.clientOf('127.0.0.1', undefined, '198.51.100.1, _hidden'), '127.0.0.1');
  });

  test('CATCOMFORT_TRUSTED_PROXIES: empty by default; addresses and CIDRs; anything else stops start-up', () => {
    assert.deepEqual(loadConfig({}).front.trustedProxies, []);
    assert.deepEqual(loadConfig({ CATCOMFORT_TRUSTED_PROXIES: ' 127.0.0.1, 10.0.0.0/8 ,::1' }).front.trustedProxies, ['127.0.0.1', '10.0.0.0/8', '::1']);
    for (const bad of ['localhost', '10.0.0.0/33', '::1/129', '1.2.3.4/8/1']) {
      assert.throws(() => loadConfig({ CATCOMFORT_TRUSTED_PROXIES: bad }), (e: unknown) => e instanceof ConfigError && /CATCOMFORT_TRUSTED_PROXIES/.test(e.message), bad);
    }
  });
});

describe('the service', () => {
  let trusting: TestServer;
  let plain: TestServer;
  before(async () => {
    [trusting, plain] = await Promise.all([startServer({ CATCOMFORT_TRUSTED_PROXIES: '127.0.0.1' }), startServer()]);
  });
  after(() => Promise.all([trusting.stop(), plain.stop()]));

  /** The access-log line of the request with this X-Request-ID. */
  const logLine = (server: TestServer, id: string) =>
    waitFor(`the access-log line of ${id}`, () => {
      const line = server.output().split('\n').find((l) => l.includes('"msg":"request"') && l.includes(`"request_id":"${id}"`));
      return line === undefined ? null : (JSON.parse(line) as Record<string, unknown>);
    }, { timeoutMs: 10_000 });

  test('the access log names the forwarded client only when the peer is trusted', async () => {
    const headers = { 'x-request-id': 'xff-trusted-1', 'x-forwarded-for': '198.51.100.23, 127.0.0.1' };
    assert.equal((await fetch(`${trusting.url}/healthz`, { headers })).status, 200);
    assert.equal((await logLine(trusting, 'xff-trusted-1')).client, '198.51.100.23');
    assert.equal((await fetch(`${plain.url}/healthz`, { headers: { ...headers, 'x-request-id': 'xff-plain-1' } })).status, 200);
    assert.equal((await logLine(plain, 'xff-plain-1')).client, '127.0.0.1');
  });

  test('a refusal without a readable head is logged for the peer, not for the previous request’s forwarded client', async () => {
    const reply = await talk(trusting.port, ['GET /healthz HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 198.51.100.77\r\n\r\n', 'GET /healthz HTTP/1.1\nHost: x\n\n']);
    assert.deepEqual(responses(reply.text).map((r) => r.status), [200, 400]);
    const refusal = await waitFor('the access-log line of the 400', () => {
      const line = trusting.output().split('\n').find((l) => l.includes('"answered_by":"front"') && l.includes('"status":400'));
      return line === undefined ? null : (JSON.parse(line) as Record<string, unknown>);
    }, { timeoutMs: 10_000 });
    assert.equal(refusal.client, '127.0.0.1');
  });

  test('the front’s own answers are logged and counted', async () => {
    const reply = await talk(plain.port, ['GET /v2/models HTTP/1.1\r\nHost: a\r\nHost: b\r\nX-Request-ID: front-400-1\r\n\r\n']);
    assert.match(reply.text, /^HTTP\/1\.1 400 /);
    const line = await logLine(plain, 'front-400-1');
    assert.equal(line.status, 400);
    assert.equal(line.answered_by, 'front');
    assert.equal(line.route, '/v2/models');
    const scrape = await (await fetch(`${plain.url}/metrics`, { headers: { 'api-key': TEST_KEY } })).text();
    assert.ok(total(parseMetrics(scrape), 'catcomfort_http_requests_total', { interface: 'v2', route: '/v2/models', status: '400' }) >= 1);
  });
});
