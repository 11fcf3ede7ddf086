// The SSRF-safe image fetcher (src/scan/fetch). All traffic goes to a node:http server on
// 127.0.0.1 started here; refused literal addresses are refused before any resolver call or
// request is created (asserted through the test seam, which throws if it is ever reached).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import {
  DEFAULT_FETCH_POLICY,
  FetchRefusedError,
  classifyAddress,
  fetchImage,
  fetchPolicy,
  type FetchErrorCode,
  type FetchPolicy,
  type ResolvedAddress,
} from '../src/scan/fetch';
import { fetchImageWithSeams, type FetchSeams } from '../src/scan/fetch/fetcher';
import { addressKey } from '../src/scan/fetch/ip';
import { photo } from './helpers/paths';
import { waitFor } from './helpers/wait';

const PNG = readFileSync(photo('000_skimage_chelsea.png'));
const JPEG = readFileSync(photo('004_oxford_Persian_163.jpg'));
/** A public address the injected resolver hands out; the seam reroutes the socket to 127.0.0.1. */
const PUBLIC = '93.184.216.34';

// ---------------------------------------------------------------------------------------------
// The local test server.

interface ImageServer {
  port: number;
  connections: number;
  requests: Array<{ url: string; method: string; headers: http.IncomingHttpHeaders }>;
  /** The last /endless response: bytes written, and whether it ended complete or was cut off. */
  endless: { sent: number; state: 'sending' | 'complete' | 'cut' } | null;
  reset(): void;
  close(): Promise<void>;
}

async function startImageServer(): Promise<ImageServer> {
  const state = { connections: 0, requests: [] as ImageServer['requests'], endless: null as ImageServer['endless'] };
  const server = http.createServer((req, res) => {
    state.requests.push({ url: req.url ?? '', method: req.method ?? '', headers: req.headers });
    const u = new URL(req.url ?? '/', 'http://x');
    const q = (k: string) => u.searchParams.get(k);
    const path = u.pathname;
    if (path === '/chelsea.png') {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end(PNG);
    } else if (path === '/persian.jpg') {
      res.writeHead(200, { 'content-type': 'IMAGE/JPEG; charset=binary' });
      res.end(JPEG);
    } else if (path === '/redirect') {
      res.writeHead(Number(q('status') ?? 302), { location: q('to') ?? '' });
      res.end();
    } else if (path === '/no-location') {
      res.writeHead(302);
      res.end();
    } else if (path.startsWith('/chain/')) {
      // /chain/N answers with N redirects in a row, then the photo.
      const n = Number(path.slice('/chain/'.length));
      res.writeHead(302, { location: n > 1 ? `/chain/${n - 1}` : '/chelsea.png' });
      res.end();
    } else if (path === '/bytes') {
      // Exactly n bytes of image/png, with Content-Length (cl=1) or chunked.
      const body = Buffer.alloc(Number(q('n')), 0x42);
      if (q('cl') === '1') {
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(body.length) });
        res.end(body);
      } else {
        res.writeHead(200, { 'content-type': 'image/png' });
        res.write(body);
        res.end();
      }
    } else if (path === '/huge-declared') {
      // Declares 100 MB and then sends nothing: only a refusal from the header ends this fast.
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(100 * 1024 * 1024) });
      res.flushHeaders();
    } else if (path === '/endless') {
      // Chunked, no Content-Length, up to 64 MB unless the client goes away.
      res.writeHead(200, { 'content-type': 'image/png' });
      const chunk = Buffer.alloc(64 * 1024, 0x42);
      const endless: NonNullable<ImageServer['endless']> = { sent: 0, state: 'sending' };
      state.endless = endless;
      res.on('close', () => (endless.state = res.writableFinished ? 'complete' : 'cut'));
      const pump = () => {
        while (endless.state === 'sending' && endless.sent < 64 * 1024 * 1024) {
          endless.sent += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', pump);
            return;
          }
        }
        if (endless.state === 'sending') res.end();
      };
      pump();
    } else if (path === '/drip') {
      // Valid headers, then one byte every 20 ms forever.
      res.writeHead(200, { 'content-type': 'image/png' });
      const t = setInterval(() => res.write(Buffer.from([0x42])), 20);
      res.on('close', () => clearInterval(t));
    } else if (path === '/hang') {
      // Never answers.
    } else if (path === '/truncated') {
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': '1000' });
      // Cut once the headers and 10 bytes are on their way.
      res.write(Buffer.alloc(10), () => res.socket?.destroy());
    } else if (path === '/type') {
      const type = q('t');
      res.writeHead(200, type === null ? {} : { 'content-type': type });
      res.end(PNG);
    } else if (path === '/gzip') {
      res.writeHead(200, { 'content-type': 'image/png', 'content-encoding': 'gzip' });
      res.end(PNG);
    } else if (path === '/empty') {
      res.writeHead(200, { 'content-type': 'image/png' });
      res.end();
    } else if (path === '/status') {
      res.writeHead(Number(q('s')), { 'content-type': 'image/png' });
      res.end(PNG);
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
    }
  });
  server.on('connection', () => state.connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    get connections() {
      return state.connections;
    },
    get requests() {
      return state.requests;
    },
    get endless() {
      return state.endless;
    },
    reset() {
      state.connections = 0;
      state.requests = [];
      state.endless = null;
    },
    close() {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Helpers.

async function expectRefusal(p: Promise<unknown>, code: FetchErrorCode): Promise<FetchRefusedError> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof FetchRefusedError, `expected FetchRefusedError(${code}), got ${String(e)}`);
    assert.equal(e.code, code, `${e.code}: ${e.message}`);
    assert.ok(e.message.length > 0);
    return e;
  }
  assert.fail(`expected a refusal with ${code}, but the fetch succeeded`);
}

/**
 * Seams + resolver that must never be reached: both throw, and count. A refused literal
 * address therefore cannot produce a request, let alone a connection, even if the check broke.
 */
function unreachable() {
  const calls = { resolve: 0, request: 0 };
  const resolve = async (): Promise<ResolvedAddress[]> => {
    calls.resolve++;
    throw new Error('the resolver must not be called');
  };
  const seams: FetchSeams = {
    onRequest: () => {
      calls.request++;
      throw new Error('no request may be created');
    },
  };
  return { calls, resolve, seams };
}

/** A resolver from a fixed table; unknown names fail like NXDOMAIN. Counts calls per name. */
function tableResolver(table: Record<string, string[]>) {
  const calls: Record<string, number> = {};
  const resolve = async (host: string): Promise<ResolvedAddress[]> => {
    calls[host] = (calls[host] ?? 0) + 1;
    const list = table[host];
    if (!list) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return list.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return { resolve, calls };
}

/** The test-only network: whatever (checked) address a name resolved to, connect to 127.0.0.1. */
const VIA_LOCALHOST: FetchSeams = { connectAddress: () => ({ address: '127.0.0.1', family: 4 }) };

let srv: ImageServer;
before(async () => {
  srv = await startImageServer();
});
after(async () => {
  await srv.close();
});
beforeEach(() => srv.reset());

const local = (path: string) => `http://127.0.0.1:${srv.port}${path}`;
const named = (host: string, path: string) => `http://${host}:${srv.port}${path}`;
/** Policy for direct fetches from the test server (UNSAFE switch on, short timeouts). */
const direct = (o: Partial<FetchPolicy> = {}) =>
  fetchPolicy({ allowPrivate: true, connectTimeoutMs: 1000, totalTimeoutMs: 3000, ...o });

// ---------------------------------------------------------------------------------------------

describe('defaults', () => {
  test('the default policy is the safe one', () => {
    assert.deepEqual(
      { ...DEFAULT_FETCH_POLICY },
      { allowPrivate: false, maxBytes: 4 * 1024 * 1024, connectTimeoutMs: 3000, totalTimeoutMs: 10000, maxRedirects: 3 },
    );
  });

  test('a broken policy is a programmer error (TypeError), not a refusal', async () => {
    await assert.rejects(fetchImage(local('/chelsea.png'), direct({ maxBytes: -1 })), TypeError);
    await assert.rejects(fetchImage(local('/chelsea.png'), direct({ maxRedirects: 1.5 })), TypeError);
    assert.equal(srv.connections, 0);
  });
});

describe('success', () => {
  test('fetches the real photo from 127.0.0.1 with allowPrivate=true', async () => {
    const r = await fetchImage(local('/chelsea.png'), direct());
    assert.equal(r.contentType, 'image/png');
    assert.ok(r.bytes.equals(PNG), 'bytes equal the file');
    assert.equal(r.finalUrl, local('/chelsea.png'));
  });

  test('sends a clear User-Agent, Accept: image/*, identity encoding, no cookies or credentials', async () => {
    await fetchImage(local('/chelsea.png#frag'), direct());
    assert.equal(srv.requests.length, 1);
    const { method, url, headers } = srv.requests[0]!;
    assert.equal(method, 'GET');
    assert.equal(url, '/chelsea.png');
    assert.equal(headers['user-agent'], 'CatComfort-Fetcher/1.0');
    assert.equal(headers['accept'], 'image/*');
    assert.equal(headers['accept-encoding'], 'identity');
    assert.equal(headers['cookie'], undefined);
    assert.equal(headers['authorization'], undefined);
  });

  test('the production path (allowPrivate=false) fetches a name that resolves to a public address', async () => {
    const { resolve, calls } = tableResolver({ 'photos.test': [PUBLIC] });
    const r = await fetchImageWithSeams(named('photos.test', '/chelsea.png'), fetchPolicy({ resolve }), VIA_LOCALHOST);
    assert.ok(r.bytes.equals(PNG));
    assert.equal(r.contentType, 'image/png');
    assert.equal(calls['photos.test'], 1);
    assert.equal(srv.requests[0]!.headers.host, `photos.test:${srv.port}`);
  });

  test('media type is normalised (IMAGE/JPEG; charset=binary → image/jpeg)', async () => {
    const r = await fetchImage(local('/persian.jpg'), direct());
    assert.equal(r.contentType, 'image/jpeg');
    assert.ok(r.bytes.equals(JPEG));
  });

  for (const t of ['image/webp', 'image/gif', 'image/tiff', 'image/avif']) {
    test(`accepts Content-Type ${t}`, async () => {
      const r = await fetchImage(local(`/type?t=${encodeURIComponent(t)}`), direct());
      assert.equal(r.contentType, t);
    });
  }

  test('a body of exactly maxBytes is accepted, with and without Content-Length', async () => {
    for (const cl of ['1', '0']) {
      const r = await fetchImage(local(`/bytes?n=1000&cl=${cl}`), direct({ maxBytes: 1000 }));
      assert.equal(r.bytes.length, 1000);
    }
  });
});

describe('URL checks (nothing is resolved or requested)', () => {
  const cases: Array<[string, FetchErrorCode]> = [
    ['', 'url_invalid'],
    ['not a url', 'url_invalid'],
    ['/relative/path.png', 'url_invalid'],
    ['http://', 'url_invalid'],
    ['http://256.1.1.1/x.png', 'url_invalid'],
    ['http://a.b.c.1.2/', 'url_invalid'],
    ['http://exa mple.com/', 'url_invalid'],
    ['http://[fe80::1%25eth0]/', 'url_invalid'],
    [`http://photos.test/${'a'.repeat(5000)}`, 'url_invalid'],
    ['ftp://127.0.0.1/cat.png', 'url_scheme'],
    ['file:///etc/passwd', 'url_scheme'],
    ['data:image/png;base64,iVBORw0KGgo=', 'url_scheme'],
    ['javascript:alert(1)', 'url_scheme'],
    ['gopher://127.0.0.1:6379/_INFO', 'url_scheme'],
    ['ws://127.0.0.1/', 'url_scheme'],
    ['blob:http://127.0.0.1/uuid', 'url_scheme'],
    ['http://user:pass@127.0.0.1/cat.png', 'url_credentials'],
    ['https://user@photos.test/cat.png', 'url_credentials'],
    ['http://:secret@photos.test/cat.png', 'url_credentials'],
  ];
  for (const [url, code] of cases) {
    test(`${code}: ${url.length > 60 ? `${url.slice(0, 40)}… (${url.length} chars)` : JSON.stringify(url)}`, async () => {
      const { calls, resolve, seams } = unreachable();
      await expectRefusal(fetchImageWithSeams(url, direct({ resolve }), seams), code);
      assert.deepEqual(calls, { resolve: 0, request: 0 });
    });
  }
});

describe('literal addresses are refused at check time, before any request', () => {
  // [url (the server port is appended), why]
  const cases: Array<[string, string]> = [
    // IPv4 blocked ranges
    ['0.0.0.0', '0/8 this network'],
    ['0.1.2.3', '0/8'],
    ['10.0.0.1', '10/8'],
    ['10.255.255.255', '10/8 top'],
    ['100.64.0.1', 'CGNAT'],
    ['100.127.255.254', 'CGNAT top'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback /8'],
    ['169.254.169.254', 'link-local / cloud metadata'],
    ['172.16.0.1', '172.16/12'],
    ['172.31.255.255', '172.16/12 top'],
    ['192.0.0.8', '192.0.0/24'],
    ['192.0.2.1', 'TEST-NET-1'],
    ['192.88.99.1', '6to4 relay anycast'],
    ['192.168.1.1', '192.168/16'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking top'],
    ['198.51.100.7', 'TEST-NET-2'],
    ['203.0.113.9', 'TEST-NET-3'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast top'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    // odd IPv4 notations (normalised by the WHATWG parser, then checked)
    ['2130706433', 'decimal 127.0.0.1'],
    ['0x7f.1', 'hex + short form'],
    ['0x7f000001', 'single hex number'],
    ['0177.0.0.1', 'octal'],
    ['017700000001', 'single octal number'],
    ['127.1', 'short form'],
    ['127.0.0.1.', 'trailing dot'],
    ['１２７.０.０.１', 'full-width digits'],
    ['0xA9.0xFE.0xA9.0xFE', 'hex metadata address'],
    ['3232235521', 'decimal 192.168.0.1'],
    ['0', 'bare zero = 0.0.0.0'],
    // IPv6
    ['[::]', 'unspecified'],
    ['[::1]', 'loopback'],
    ['[0:0:0:0:0:0:0:1]', 'loopback, long form'],
    ['[fe80::1]', 'link-local'],
    ['[febf:ffff::1]', 'link-local top'],
    ['[fec0::1]', 'site-local (deprecated)'],
    ['[fc00::1]', 'ULA'],
    ['[fd12:3456:789a::1]', 'ULA fd'],
    ['[ff02::1]', 'multicast'],
    ['[ff05::1:3]', 'multicast site'],
    ['[2001:db8::1]', 'documentation'],
    ['[3fff::1]', 'documentation (RFC 9637)'],
    ['[100::1]', 'discard-only'],
    ['[5f00::1]', 'not global unicast'],
    ['[2001:2::1]', 'benchmarking'],
    // IPv4 hidden in IPv6
    ['[::ffff:127.0.0.1]', 'mapped loopback'],
    ['[::ffff:7f00:1]', 'mapped loopback, hex'],
    ['[0:0:0:0:0:ffff:10.0.0.1]', 'mapped private'],
    ['[::ffff:169.254.169.254]', 'mapped metadata'],
    ['[::ffff:0:7f00:1]', 'IPv4-translated loopback'],
    ['[::127.0.0.1]', 'compatible loopback'],
    ['[::10.0.0.1]', 'compatible private'],
    ['[::8.8.8.8]', 'compatible is blocked entirely, even public'],
    ['[64:ff9b::127.0.0.1]', 'NAT64 loopback'],
    ['[64:ff9b::a9fe:a9fe]', 'NAT64 metadata'],
    ['[64:ff9b:1::8.8.8.8]', 'local-use NAT64 blocked entirely'],
    ['[2002:7f00:1::]', '6to4 of 127.0.0.1'],
    ['[2002:a9fe:a9fe::1]', '6to4 of 169.254.169.254'],
    ['[2002:c0a8:101::]', '6to4 of 192.168.1.1'],
    ['[2001:0:4136:e378:8000:63bf:3fff:fdd2]', 'Teredo (RFC 4380 example) blocked entirely'],
    ['[2001:0:a00:1::f5ff:fffe]', 'Teredo, server 10.0.0.1, client 10.0.0.1'],
  ];
  for (const [host, why] of cases) {
    test(`address_blocked: ${host} (${why})`, async () => {
      const { calls, resolve, seams } = unreachable();
      const url = `http://${host}:${srv.port}/chelsea.png`;
      const e = await expectRefusal(fetchImageWithSeams(url, fetchPolicy({ resolve }), seams), 'address_blocked');
      assert.deepEqual(calls, { resolve: 0, request: 0 }, 'refused at check time');
      assert.equal(srv.connections, 0);
      assert.doesNotMatch(e.message, /\d+\.\d+\.\d+\.\d+|::/, 'the message names no address');
    });
  }

  test('https URLs are checked the same way', async () => {
    const { calls, resolve, seams } = unreachable();
    await expectRefusal(fetchImageWithSeams('https://10.1/', fetchPolicy({ resolve }), seams), 'address_blocked');
    await expectRefusal(fetchImageWithSeams('https://[fd00::1]:8443/', fetchPolicy({ resolve }), seams), 'address_blocked');
    assert.deepEqual(calls, { resolve: 0, request: 0 });
  });
});

describe('names are checked at connect time, every answer', () => {
  const cases: Array<[string, string[]]> = [
    ['a private address', ['10.0.0.5']],
    ['loopback', ['127.0.0.1']],
    ['IPv6 loopback', ['::1']],
    ['the metadata address', ['169.254.169.254']],
    ['a mapped metadata address', ['::ffff:169.254.169.254']],
    ['one public and one private address', [PUBLIC, '10.0.0.5']],
    ['one private and one public address', ['192.168.0.10', PUBLIC]],
    ['a public IPv6 and a ULA', ['2606:4700:4700::1111', 'fd00::1']],
    ['a link-local address with a zone id', ['fe80::1%eth0']],
    ['garbage', ['not-an-ip']],
  ];
  for (const [what, answers] of cases) {
    test(`address_blocked: the name resolves to ${what}`, async () => {
      const { resolve, calls } = tableResolver({ 'evil.test': answers });
      const e = await expectRefusal(
        fetchImageWithSeams(named('evil.test', '/chelsea.png'), fetchPolicy({ resolve }), VIA_LOCALHOST),
        'address_blocked',
      );
      assert.equal(calls['evil.test'], 1);
      assert.equal(srv.connections, 0, 'no connection was made');
      for (const a of answers) assert.ok(!e.message.includes(a), 'the message does not leak the resolved address');
    });
  }

  test('localhost through the default (system) resolver is refused', async () => {
    await expectRefusal(fetchImage(named('localhost', '/chelsea.png'), fetchPolicy()), 'address_blocked');
    assert.equal(srv.connections, 0);
  });

  test('dns_failed: the resolver throws, or returns nothing', async () => {
    const throwing = fetchPolicy({ resolve: async () => Promise.reject(new Error('SERVFAIL')) });
    await expectRefusal(fetchImage(named('photos.test', '/x.png'), throwing), 'dns_failed');
    const empty = fetchPolicy({ resolve: async () => [] });
    await expectRefusal(fetchImage(named('photos.test', '/x.png'), empty), 'dns_failed');
    assert.equal(srv.connections, 0);
  });

  test('DNS rebinding: each hop resolves anew and the private answer is refused', async () => {
    const answers = [PUBLIC, '127.0.0.1'];
    let n = 0;
    const resolve = async (): Promise<ResolvedAddress[]> => [{ address: answers[Math.min(n++, 1)]!, family: 4 }];
    const to = named('photos.test', '/chelsea.png');
    await expectRefusal(
      fetchImageWithSeams(named('photos.test', `/redirect?to=${encodeURIComponent(to)}`), fetchPolicy({ resolve }), VIA_LOCALHOST),
      'address_blocked',
    );
    assert.equal(n, 2, 'resolved once per hop, at connect time');
    assert.equal(srv.requests.length, 1, 'the second hop never reached the server');
  });

  test('connect_timeout: resolution + connect must finish within connectTimeoutMs', async () => {
    // The resolver never answers: only the 100 ms connect timer can end this with connect_timeout
    // (the total timer would give timeout, after 10 s).
    const resolve = () => new Promise<ResolvedAddress[]>(() => {});
    const started = Date.now();
    await expectRefusal(fetchImage(named('slow-dns.test', '/x.png'), fetchPolicy({ resolve, connectTimeoutMs: 100 })), 'connect_timeout');
    const took = Date.now() - started;
    assert.ok(took >= 90, `took ${took} ms`);
  });
});

describe('redirects (first hop allowed via the test network, allowPrivate=false)', () => {
  const { resolve } = tableResolver({
    'photos.test': [PUBLIC],
    'internal.test': ['192.168.0.10'],
    localhost: ['127.0.0.1', '::1'],
  });
  const policy = (o: Partial<FetchPolicy> = {}) => fetchPolicy({ resolve, connectTimeoutMs: 1000, totalTimeoutMs: 3000, ...o });
  const redirectTo = (to: string, status = 302) =>
    named('photos.test', `/redirect?status=${status}&to=${encodeURIComponent(to)}`);

  // PORT is replaced by the test server's port when the test runs.
  const refusedTargets: Array<[string, FetchErrorCode]> = [
    ['http://10.0.0.1/x.png', 'address_blocked'],
    ['http://127.0.0.1:PORT/chelsea.png', 'address_blocked'],
    ['http://169.254.169.254/latest/meta-data/', 'address_blocked'],
    ['http://[::1]:PORT/chelsea.png', 'address_blocked'],
    ['http://[::ffff:127.0.0.1]:PORT/chelsea.png', 'address_blocked'],
    ['http://2130706433:PORT/chelsea.png', 'address_blocked'],
    ['http://[fd00::1]/x.png', 'address_blocked'],
    ['http://internal.test:PORT/chelsea.png', 'address_blocked'],
    ['http://localhost:PORT/chelsea.png', 'address_blocked'],
    ['ftp://photos.test/cat.png', 'url_scheme'],
    ['file:///etc/passwd', 'url_scheme'],
    ['gopher://127.0.0.1:6379/_FLUSHALL', 'url_scheme'],
    ['http://user:pass@photos.test:PORT/chelsea.png', 'url_credentials'],
    ['http://[zz', 'url_invalid'],
  ];
  for (const [target, code] of refusedTargets) {
    test(`${code}: redirect to ${target}`, async () => {
      const to = target.replace('PORT', String(srv.port));
      await expectRefusal(fetchImageWithSeams(redirectTo(to), policy(), VIA_LOCALHOST), code);
      assert.equal(srv.requests.length, 1, 'only the first hop reached the server');
      assert.equal(srv.connections, 1);
    });
  }

  for (const status of [301, 302, 303, 307, 308]) {
    test(`follows a ${status} to an allowed target`, async () => {
      const r = await fetchImageWithSeams(redirectTo(named('photos.test', '/chelsea.png'), status), policy(), VIA_LOCALHOST);
      assert.ok(r.bytes.equals(PNG));
      assert.equal(r.finalUrl, named('photos.test', '/chelsea.png'));
    });
  }

  test('follows a relative Location', async () => {
    const r = await fetchImageWithSeams(redirectTo('/chelsea.png'), policy(), VIA_LOCALHOST);
    assert.equal(r.finalUrl, named('photos.test', '/chelsea.png'));
    assert.equal(srv.connections, 2, 'a fresh connection per hop');
  });

  test('a chain of exactly maxRedirects (3) redirects succeeds', async () => {
    const r = await fetchImageWithSeams(named('photos.test', '/chain/3'), policy(), VIA_LOCALHOST);
    assert.ok(r.bytes.equals(PNG));
    assert.equal(srv.requests.length, 4);
  });

  test('too_many_redirects: a chain of 4', async () => {
    await expectRefusal(fetchImageWithSeams(named('photos.test', '/chain/4'), policy(), VIA_LOCALHOST), 'too_many_redirects');
    assert.equal(srv.requests.length, 4, 'the 4th redirect is not followed');
  });

  test('too_many_redirects: an endless chain', async () => {
    await expectRefusal(fetchImageWithSeams(named('photos.test', '/chain/1000'), policy(), VIA_LOCALHOST), 'too_many_redirects');
    assert.equal(srv.requests.length, 4);
  });

  test('too_many_redirects: maxRedirects=0 refuses the first redirect', async () => {
    await expectRefusal(fetchImageWithSeams(named('photos.test', '/chain/1'), policy({ maxRedirects: 0 }), VIA_LOCALHOST), 'too_many_redirects');
    assert.equal(srv.requests.length, 1);
  });

  test('bad_redirect: a 302 without Location', async () => {
    await expectRefusal(fetchImageWithSeams(named('photos.test', '/no-location'), policy(), VIA_LOCALHOST), 'bad_redirect');
  });
});

describe('size limits', () => {
  test('too_large: Content-Length over maxBytes is refused before reading the body', async () => {
    // The body never comes: waiting for it would end in timeout, not too_large.
    await expectRefusal(fetchImage(local('/huge-declared'), direct({ totalTimeoutMs: 5000 })), 'too_large');
  });

  test('too_large: Content-Length of maxBytes + 1', async () => {
    await expectRefusal(fetchImage(local('/bytes?n=1001&cl=1'), direct({ maxBytes: 1000 })), 'too_large');
  });

  test('too_large: chunked body of maxBytes + 1 (no Content-Length)', async () => {
    await expectRefusal(fetchImage(local('/bytes?n=1001&cl=0'), direct({ maxBytes: 1000 })), 'too_large');
  });

  test('too_large: an endless chunked body is cut while streaming', async () => {
    await expectRefusal(fetchImage(local('/endless'), direct({ maxBytes: 256 * 1024 })), 'too_large');
    const endless = await waitFor('the /endless response to end', () => srv.endless?.state !== 'sending' && srv.endless);
    assert.equal(endless.state, 'cut', 'the client went away before the end of the body');
    assert.ok(endless.sent < 64 * 1024 * 1024, `${endless.sent} bytes sent`);
  });

  test('too_large: the real photo with maxBytes below its size', async () => {
    await expectRefusal(fetchImage(local('/chelsea.png'), direct({ maxBytes: PNG.length - 1 })), 'too_large');
  });
});

describe('timeouts', () => {
  test('timeout: a slow-drip body is cut at totalTimeoutMs', async () => {
    const started = Date.now();
    await expectRefusal(fetchImage(local('/drip'), direct({ totalTimeoutMs: 300 })), 'timeout');
    const took = Date.now() - started;
    assert.ok(took >= 290, `took ${took} ms`);
  });

  test('timeout: a server that never answers', async () => {
    const started = Date.now();
    await expectRefusal(fetchImage(local('/hang'), direct({ totalTimeoutMs: 300 })), 'timeout');
    const took = Date.now() - started;
    assert.ok(took >= 290, `took ${took} ms`);
  });
});

describe('responses that are not an image', () => {
  for (const t of ['text/html', 'application/json', 'text/plain', 'image/svg+xml', 'application/octet-stream', 'image']) {
    test(`bad_content_type: ${t}`, async () => {
      await expectRefusal(fetchImage(local(`/type?t=${encodeURIComponent(t)}`), direct()), 'bad_content_type');
    });
  }

  test('bad_content_type: no Content-Type at all', async () => {
    await expectRefusal(fetchImage(local('/type'), direct()), 'bad_content_type');
  });

  test('bad_status: 404', async () => {
    const e = await expectRefusal(fetchImage(local('/missing.png'), direct()), 'bad_status');
    assert.match(e.message, /404/);
  });

  test('bad_status: 500, 403, 204, 206 and 304 (even with an image type)', async () => {
    for (const s of [500, 403, 204, 206, 304]) await expectRefusal(fetchImage(local(`/status?s=${s}`), direct()), 'bad_status');
  });

  test('bad_content_encoding: gzip although identity was asked for', async () => {
    await expectRefusal(fetchImage(local('/gzip'), direct()), 'bad_content_encoding');
  });

  test('empty_body: 200 image/png with no bytes', async () => {
    await expectRefusal(fetchImage(local('/empty'), direct()), 'empty_body');
  });

  test('network_error: the connection drops mid-body', async () => {
    await expectRefusal(fetchImage(local('/truncated'), direct()), 'network_error');
  });

  test('network_error: connection refused, without naming the address', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const { resolve } = tableResolver({ 'gone.test': ['127.0.0.1'] });
    const e = await expectRefusal(fetchImage(`http://gone.test:${port}/x.png`, direct({ resolve })), 'network_error');
    assert.ok(!e.message.includes('127.0.0.1') && !e.message.includes(String(port)));
  });

  test('network_error: https to a plain-http server fails the TLS handshake', async () => {
    await expectRefusal(fetchImage(`https://127.0.0.1:${srv.port}/chelsea.png`, direct()), 'network_error');
  });
});

describe('address classifier', () => {
  test('boundaries of the IPv4 ranges', () => {
    const allowed = [
      '1.1.1.1', '8.8.8.8', '9.255.255.255', '11.0.0.0', '100.63.255.255', '100.128.0.0', '126.255.255.255',
      '128.0.0.0', '169.253.255.255', '169.255.0.0', '172.15.255.255', '172.32.0.0', '192.0.1.0', '192.0.3.0',
      '192.88.98.255', '192.88.100.0', '192.167.255.255', '192.169.0.0', '198.17.255.255', '198.20.0.0',
      '198.51.99.255', '198.51.101.0', '203.0.112.255', '203.0.114.0', '223.255.255.255',
    ];
    const blocked = [
      '0.0.0.0', '0.255.255.255', '10.0.0.0', '100.64.0.0', '100.127.255.255', '127.0.0.0', '169.254.0.0',
      '169.254.255.255', '172.16.0.0', '172.31.255.255', '192.0.0.0', '192.0.0.255', '192.0.2.255', '192.88.99.0',
      '192.168.0.0', '198.18.0.0', '198.19.255.255', '198.51.100.0', '203.0.113.255', '224.0.0.0', '239.255.255.255',
      '240.0.0.0', '255.255.255.255',
    ];
    for (const a of allowed) assert.equal(classifyAddress(a).blocked, false, a);
    for (const a of blocked) assert.equal(classifyAddress(a).blocked, true, a);
  });

  test('IPv6: public unicast and public embedded IPv4 are allowed', () => {
    for (const a of ['2606:4700:4700::1111', '2a00:1450:4001:81c::200e', '::ffff:8.8.8.8', '::ffff:808:808', '64:ff9b::8.8.8.8', '2002:808:808::1', '2001:4860::8888', '3fff:1000::1']) {
      assert.equal(classifyAddress(a).blocked, false, a);
    }
  });

  test('IPv6: the embedded IPv4 decides for mapped, NAT64 and 6to4', () => {
    assert.equal(classifyAddress('::ffff:10.1.2.3').reason, 'ipv4-mapped(private)');
    assert.equal(classifyAddress('64:ff9b::c0a8:1').reason, 'nat64(private)');
    assert.equal(classifyAddress('2002:a00:1::').reason, '6to4(private)');
    assert.equal(classifyAddress('2002:0808:0808:ffff::').blocked, false);
    assert.equal(classifyAddress('2001:0:808:808::').reason, 'teredo');
    assert.equal(classifyAddress('::8.8.8.8').reason, 'ipv4-compatible');
  });

  test('anything not strictly parseable is blocked (fail closed)', () => {
    for (const a of ['', '1.2.3', '1.2.3.4.5', '01.2.3.4', '1.2.3.256', '1::2::3', '12345::1', 'fe80::1%eth0', '::ffff:1.2.3.256', '1:2:3:4:5:6:7:8:9', 'example.com', ' 8.8.8.8']) {
      assert.deepEqual(classifyAddress(a), { blocked: true, reason: 'unparseable' }, JSON.stringify(a));
    }
  });

  test('equivalent spellings compare equal', () => {
    assert.equal(addressKey('::1'), addressKey('0:0:0:0:0:0:0:1'));
    assert.equal(addressKey('::ffff:127.0.0.1'), addressKey('::FFFF:7f00:1'));
    assert.equal(addressKey('[2001:db8::1]'), addressKey('2001:0db8:0:0:0:0:0:1'));
    assert.notEqual(addressKey('::1'), addressKey('::2'));
  });
});
