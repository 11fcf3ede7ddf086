// The HTTP front (src/front/), the only HTTP parser on the public port: requests a lax parser (uWS
// 20.30) drops or misreads get a proper answer, valid ones are served, answers stay in order, and a
// busy port stops start-up with exit code 2. Raw sockets against the real service on 127.0.0.1; every wait ends on a socket event
// (data, close) or a process exit, with a generous upper bound.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../src/config';
import type { Exchange } from '../src/http/exchange';
import { MAX_HEADER_FIELDS, parseHead } from '../src/front/head';
import { Router } from '../src/http/router';
import { HttpServer } from '../src/front/server';
import { renderV1Error } from '../src/v1/errors';
import { photo, repoRoot } from './helpers/paths';
import { atLeast, responses, talk } from './helpers/raw-http';
import { startServer, TEST_KEY, type TestServer } from './helpers/server';

const K = `api-key: ${TEST_KEY}\r\n`;

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(() => server.stop());

describe('framing and smuggling', () => {
  test('two Content-Length headers: one 400, the connection closes, the smuggled request is never answered', async () => {
    const reply = await talk(server.port, [
      `POST /v2/predict HTTP/1.1\r\nHost: x\r\n${K}Content-Length: 2\r\nContent-Length: 40\r\n\r\nxxGET /ping HTTP/1.1\r\nHost: x\r\n${K}\r\n`,
    ]);
    assert.equal(reply.closed, true);
    const all = responses(reply.text);
    assert.equal(all.length, 1, reply.text);
    assert.equal(all[0]!.status, 400);
    assert.equal(all[0]!.headers.get('connection'), 'close');
    assert.equal(JSON.parse(all[0]!.body).error.code, 'http_error');
    assert.equal(reply.text.split('HTTP/1.1 ').length - 1, 1, 'exactly one status line');
  });

  test('Content-Length with Transfer-Encoding: 400 and close', async () => {
    const reply = await talk(server.port, [`POST /v2/predict HTTP/1.1\r\nHost: x\r\n${K}Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\nxx`]);
    assert.equal(reply.closed, true);
    const all = responses(reply.text);
    assert.deepEqual(all.map((r) => r.status), [400]);
    assert.equal(all[0]!.headers.get('connection'), 'close');
  });

  test('a chunked body with extensions and trailers, split across segments, is served', async () => {
    const body = Buffer.from(JSON.stringify({ image: readFileSync(photo('000_skimage_chelsea.png')).toString('base64') }));
    const half = Math.floor(body.length / 2);
    const reply = await talk(
      server.port,
      [
        `POST /v2/predict HTTP/1.1\r\nHost: x\r\n${K}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
        `${half.toString(16)};name=value\r\n`,
        body.subarray(0, half),
        `\r\n${(body.length - half).toString(16)}\r\n`,
        Buffer.concat([body.subarray(half), Buffer.from('\r\n0\r\n')]),
        'X-Checksum: none\r\n',
        '\r\n',
      ],
      atLeast(1),
    );
    const [answer] = responses(reply.text);
    assert.equal(answer!.status, 200, answer!.body);
    assert.equal(JSON.parse(answer!.body).detection, 'detected');
  });

  test('Expect: 100-continue with a Content-Length 10x the body limit: 413 at once, no 100 Continue', async () => {
    const declared = 10 * 8 * 1024 * 1024; // the default CATCOMFORT_MAX_BODY_BYTES is 8 MiB
    const reply = await talk(server.port, [
      `POST /v2/predict HTTP/1.1\r\nHost: x\r\n${K}Content-Type: application/json\r\nContent-Length: ${declared}\r\nExpect: 100-continue\r\n\r\n`,
    ]);
    assert.equal(reply.closed, true);
    assert.ok(!reply.text.includes('100 Continue'), reply.text);
    const all = responses(reply.text);
    assert.deepEqual(all.map((r) => r.status), [413]);
    assert.equal(JSON.parse(all[0]!.body).error.code, 'http_error');
  });

  test('a Content-Length past 64 MiB without Expect, up to ten digits and more: 413 at once, close', async () => {
    for (const declared of ['100000000', '5000000000', '999999999999999']) {
      const reply = await talk(server.port, [`POST /v2/predict HTTP/1.1\r\nHost: x\r\n${K}Content-Type: application/json\r\nContent-Length: ${declared}\r\n\r\n{"image":`]);
      assert.equal(reply.closed, true, declared);
      const all = responses(reply.text);
      assert.deepEqual(all.map((r) => r.status), [413], `${declared}: ${reply.text}`);
      assert.equal(JSON.parse(all[0]!.body).error.code, 'http_error');
    }
  });
});

describe('request heads', () => {
  test('a 20 KB head arriving in three segments is served', async () => {
    const filler = 'a'.repeat(7000);
    const reply = await talk(
      server.port,
      [`GET /v2/models HTTP/1.1\r\nHost: x\r\n${K}X-Filler-1: ${filler}\r\n`, `X-Filler-2: ${filler}\r\n`, `X-Filler-3: ${filler}\r\n\r\n`],
      atLeast(1),
    );
    const [answer] = responses(reply.text);
    assert.equal(answer!.status, 200, answer!.body);
    assert.ok(Array.isArray(JSON.parse(answer!.body).models));
  });

  test(`60 header fields: 431 and close (the limit is ${MAX_HEADER_FIELDS})`, async () => {
    assert.equal(MAX_HEADER_FIELDS, 40);
    const fields = Array.from({ length: 58 }, (_, i) => `X-Field-${i}: v\r\n`).join('');
    const reply = await talk(server.port, [`GET /v2/models HTTP/1.1\r\nHost: x\r\n${K}${fields}\r\n`]);
    assert.equal(reply.closed, true);
    const all = responses(reply.text);
    assert.deepEqual(all.map((r) => r.status), [431]);
    assert.equal(JSON.parse(all[0]!.body).error.code, 'http_error');
    // At the limit, the request is served.
    const atLimit = Array.from({ length: MAX_HEADER_FIELDS - 2 }, (_, i) => `X-Field-${i}: v\r\n`).join('');
    const served = await talk(server.port, [`GET /v2/models HTTP/1.1\r\nHost: x\r\n${K}${atLimit}\r\n`], atLeast(1));
    assert.equal(responses(served.text)[0]!.status, 200);
  });

  test('PROPFIND and lower-case get: 405 with Allow on a routed path (connection kept), 501 elsewhere', async () => {
    const reply = await talk(
      server.port,
      [`PROPFIND /v2/models HTTP/1.1\r\nHost: x\r\n${K}\r\nget /ping HTTP/1.1\r\nHost: x\r\n${K}\r\nPROPFIND /nowhere HTTP/1.1\r\nHost: x\r\n\r\nGET /ping HTTP/1.1\r\nHost: x\r\n${K}\r\n`],
      atLeast(4),
    );
    const [propfind, lower, unrouted, ping] = responses(reply.text);
    assert.equal(propfind!.status, 405);
    assert.equal(propfind!.headers.get('allow'), 'GET');
    assert.equal(JSON.parse(propfind!.body).error.code, 'method_not_allowed');
    assert.equal(lower!.status, 405);
    assert.equal(lower!.headers.get('allow'), 'GET');
    assert.deepEqual(JSON.parse(lower!.body), { detail: 'Method Not Allowed' });
    assert.equal(unrouted!.status, 501);
    assert.equal(ping!.status, 200);
  });

  test('HTTP/1.1 without Host, or with two: 400', async () => {
    for (const hosts of ['', 'Host: a\r\nHost: b\r\n']) {
      const reply = await talk(server.port, [`GET /v2/models HTTP/1.1\r\n${hosts}${K}\r\n`]);
      assert.equal(reply.closed, true);
      const all = responses(reply.text);
      assert.deepEqual(all.map((r) => r.status), [400]);
      assert.equal(JSON.parse(all[0]!.body).error.code, 'http_error');
    }
  });
});

describe('answers', () => {
  test('HEAD: the answer has no body bytes (the next answer follows the head at once)', async () => {
    const reply = await talk(server.port, [`HEAD /ping HTTP/1.1\r\nHost: x\r\n${K}\r\nGET /ping HTTP/1.1\r\nHost: x\r\n${K}\r\n`], atLeast(2, [true]));
    const [head, get] = responses(reply.text, [true]);
    assert.ok(Number(head!.headers.get('content-length')) > 0);
    assert.ok(reply.text.startsWith(head!.raw + 'HTTP/1.1 200 '), reply.text);
    assert.equal(JSON.parse(get!.body).status, 'healthy');
  });

  test('pipelined requests are answered in order, the front’s own answers included', async () => {
    const image = readFileSync(photo('000_skimage_chelsea.png')).toString('base64');
    const predict = JSON.stringify({ image });
    const reply = await talk(
      server.port,
      [
        `POST /v2/predict HTTP/1.1\r\nHost: x\r\n${K}Content-Type: application/json\r\nContent-Length: ${predict.length}\r\n\r\n${predict}` +
          `PURGE /v2/models HTTP/1.1\r\nHost: x\r\n${K}\r\n` +
          `GET /ping HTTP/1.1\r\nHost: x\r\n${K}\r\n`,
      ],
      atLeast(3),
    );
    const all = responses(reply.text);
    assert.deepEqual(all.map((r) => r.status), [200, 405, 200]);
    assert.equal(JSON.parse(all[0]!.body).detection, 'detected');
    assert.equal(JSON.parse(all[2]!.body).status, 'healthy');
  });
});

/** Deterministic cut points (a small LCG), so every run splits the same way. */
function cutPoints(length: number, count: number, seed: number): number[] {
  let state = seed;
  const cuts = new Set<number>();
  for (let i = 0; i < count; i++) {
    state = (state * 1103515245 + 12345) & 0x7fffffff;
    cuts.add(1 + (state % (length - 1)));
  }
  return [0, ...[...cuts].sort((a, b) => a - b), length];
}

/** The front's limits as the service has them by default (the settings table). */
function serverDefaults() {
  const { front, requestTimeoutMs } = loadConfig({});
  return { front, upstreamWaitMs: requestTimeoutMs };
}

function pieces(bytes: Buffer, cuts: number[]): Buffer[] {
  return cuts.slice(1).map((end, i) => bytes.subarray(cuts[i]!, end));
}

describe('splits', () => {
  test('pipelined requests cut at arbitrary points (heads, Content-Length and chunked bodies) are answered in order', async () => {
    const router = new Router(renderV1Error);
    const echo = (ex: Exchange) =>
      ex.readBody(1024 * 1024).then((body) => ex.send(200, { 'Content-Type': 'text/plain' }, `${ex.method} ${ex.path} ${body.length} ${body.subarray(0, 8).toString()}`));
    router.add('GET', '/echo', echo).add('POST', '/echo', echo).add('PUT', '/echo', echo);
    const http = new HttpServer(router, { maxBodyBytes: 1024 * 1024, ...serverDefaults() });
    const port = await http.listen('127.0.0.1', 0);
    const big = 'b'.repeat(70_000);
    const requests: Array<[string, string | null]> = [
      ['GET /echo HTTP/1.1\r\nHost: x\r\n\r\n', 'GET /echo 0 '],
      ['POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello', 'POST /echo 5 hello'],
      ['POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3;a=b\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\n', 'POST /echo 5 abcde'],
      [`\r\nPUT /echo HTTP/1.1\r\nHost: x\r\nX-Pad: ${'p'.repeat(9000)}\r\nContent-Length: 3\r\n\r\nxyz`, 'PUT /echo 3 xyz'],
      [`POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: ${big.length}\r\n\r\n${big}`, `POST /echo ${big.length} bbbbbbbb`],
      [`POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n${big.length.toString(16)}\r\n${big}\r\n0\r\n\r\n`, `POST /echo ${big.length} bbbbbbbb`],
      ['HEAD /echo HTTP/1.1\r\nHost: x\r\n\r\n', null],
      ['GET /echo HTTP/1.1\r\nHost: x\r\n\r\n', 'GET /echo 0 '],
    ];
    const bytes = Buffer.from(requests.map(([request]) => request).join(''), 'latin1');
    const bodiless = requests.map(([, answer]) => answer === null);
    try {
      for (let trial = 0; trial < 12; trial++) {
        const cuts = trial === 0 ? [0, ...Array.from({ length: 300 }, (_, i) => i + 1), bytes.length] : cutPoints(bytes.length, 3 * trial, trial);
        const reply = await talk(port, pieces(bytes, cuts), atLeast(requests.length, bodiless));
        const all = responses(reply.text, bodiless);
        assert.deepEqual(
          all.map((r, i) => (bodiless[i] ? null : r.body)),
          requests.map(([, answer]) => answer),
          `trial ${trial}`,
        );
        assert.equal(all.map((r) => r.raw).join(''), reply.text, `trial ${trial}: nothing after the answers`);
      }
    } finally {
      http.stopListening();
      await http.drain(5_000);
    }
  });
});

describe('client address', () => {
  test('the service sees the client address as ex.peerAddress, whatever fields the client sends', async () => {
    const router = new Router(renderV1Error);
    router.add('GET', '/peer', (ex) =>
      ex.send(200, { 'Content-Type': 'application/json' }, JSON.stringify({ peer: ex.peerAddress, field: ex.header('catcomfort-peer-address') ?? null })),
    );
    const http = new HttpServer(router, { maxBodyBytes: 1024, ...serverDefaults() });
    const port = await http.listen('127.0.0.1', 0);
    try {
      const reply = await talk(port, [`GET /peer HTTP/1.1\r\nHost: x\r\nCatComfort-Peer-Address: 203.0.113.9\r\n\r\n`], atLeast(1));
      assert.deepEqual(JSON.parse(responses(reply.text)[0]!.body), { peer: '127.0.0.1', field: '203.0.113.9' });
    } finally {
      http.stopListening();
      await http.drain(5_000);
    }
  });

  test('the head parser judges framing fields strictly', () => {
    const head = (fields: string) => parseHead(`POST / HTTP/1.1\r\nHost: x\r\n${fields}\r\n`);
    const refused = (fields: string) => {
      const parsed = head(fields);
      return parsed.ok ? null : parsed.refusal.kind;
    };
    assert.equal(refused('Content-Length: 5\r\nContent-Length: 5\r\n'), 'bad_request');
    assert.equal(refused('Content-Length: +5\r\n'), 'bad_request');
    assert.equal(refused('Content-Length: 5, 5\r\n'), 'bad_request');
    assert.equal(refused('Transfer-Encoding: gzip, chunked\r\n'), 'not_implemented');
    assert.equal(refused('Transfer-Encoding: chunked, gzip\r\n'), 'bad_request');
    assert.equal(refused('Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n'), 'bad_request');
    assert.equal(refused('X-A : b\r\n'), 'bad_request');
    assert.equal(refused('X-A: b\r\n c\r\n'), 'bad_request');
    assert.equal(refused('Transfer-Encoding: Chunked\r\n'), null);
    const ok = head('content-length: 12\r\nExpect: 100-Continue\r\nConnection: keep-alive, close\r\n');
    assert.ok(ok.ok);
    assert.equal(ok.head.contentLength, 12);
    assert.equal(ok.head.expectContinue, true);
    assert.equal(ok.head.close, true);
  });
});

describe('the public port', () => {
  /** Runs the service to its exit (bounded); if it starts serving instead, stops it and says so. */
  async function runToExit(port: number): Promise<{ code: number | null; output: string }> {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'catcomfort-front-test-'));
    const child = spawn(process.execPath, [path.join(repoRoot, 'dist/src/main.js')], {
      cwd: repoRoot,
      env: { ...process.env, CATCOMFORT_HOST: '127.0.0.1', CATCOMFORT_PORT: String(port), CATCOMFORT_API_KEYS: TEST_KEY, CATCOMFORT_DATA_DIR: dataDir, CATCOMFORT_SCAN_WORKERS: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('"msg":"listening"')) child.kill('SIGKILL');
    });
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      const code = await new Promise<number | null>((resolve, reject) => {
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error(`the second instance neither exited nor listened within 60 s:\n${output}`));
        }, 60_000);
        child.once('exit', (c) => {
          clearTimeout(timer);
          resolve(c);
        });
      });
      return { code, output };
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }

  test('a second instance on the port of a running one exits with code 2 and says the port is in use', async () => {
    const second = await runToExit(server.port);
    assert.ok(second.output.includes(`CATCOMFORT_PORT ${server.port} on 127.0.0.1 is already in use`), second.output);
    assert.equal(second.code, 2, second.output);
    const still = await talk(server.port, [`GET /ping HTTP/1.1\r\nHost: x\r\n${K}\r\n`], atLeast(1));
    assert.equal(responses(still.text)[0]!.status, 200);
  });

  test('a port held by another program: exit code 2, same message', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const port = (holder.address() as net.AddressInfo).port;
    try {
      const second = await runToExit(port);
      assert.ok(second.output.includes(`CATCOMFORT_PORT ${port} on 127.0.0.1 is already in use`), second.output);
      assert.equal(second.code, 2, second.output);
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
  });
});
