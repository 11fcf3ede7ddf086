// HTTP/1.0 through the front (RFC 9112 §9.3, RFC 9110 §6.2): served with an HTTP/1.1 status line,
// closed after the answer unless the client asked for keep-alive, no Host needed, no interim or
// chunked answers, Transfer-Encoding refused; HTTP/2 and unknown versions still get 505. Raw
// sockets against the real service; the answer writer's connection rules alone.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { PassThrough } from 'node:stream';
import type net from 'node:net';
import { writeAnswer } from '../src/front/answer-writer';
import { photo } from './helpers/paths';
import { atLeast, responses, talk } from './helpers/raw-http';
import { startServer, TEST_KEY, type TestServer } from './helpers/server';

const K = `api-key: ${TEST_KEY}\r\n`;

let server: TestServer;
before(async () => {
  server = await startServer();
});
after(() => server.stop());

describe('HTTP/1.0 clients', () => {
  test('GET without Host: 200 with an HTTP/1.1 status line and Connection: close, then the server closes', async () => {
    const reply = await talk(server.port, ['GET /healthz HTTP/1.0\r\n\r\n']);
    assert.equal(reply.closed, true);
    assert.match(reply.text, /^HTTP\/1\.1 200 /);
    const [answer] = responses(reply.text);
    assert.equal(answer!.headers.get('connection'), 'close');
    assert.equal(answer!.headers.has('transfer-encoding'), false);
    assert.equal(answer!.raw, reply.text, 'nothing after the answer');
  });

  test('Connection: keep-alive: two requests on one connection, each answered keep-alive, the connection stays open', async () => {
    const get = `GET /v2/models HTTP/1.0\r\nConnection: keep-alive\r\n${K}\r\n`;
    const reply = await talk(server.port, [get, get], atLeast(2));
    assert.equal(reply.closed, false);
    const all = responses(reply.text);
    assert.deepEqual(all.map((r) => [r.status, r.headers.get('connection')]), [[200, 'keep-alive'], [200, 'keep-alive']]);
  });

  test('POST /v2/predict with a photo: 200 with the prediction; Expect: 100-continue gets no interim answer', async () => {
    const body = JSON.stringify({ image: readFileSync(photo('000_skimage_chelsea.png')).toString('base64') });
    const head = `POST /v2/predict HTTP/1.0\r\nHost: x\r\n${K}Content-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: ${body.length}\r\n\r\n`;
    const reply = await talk(server.port, [head, body]);
    assert.equal(reply.closed, true);
    assert.doesNotMatch(reply.text, /100 Continue/);
    const [answer] = responses(reply.text);
    assert.equal(answer!.status, 200, answer!.body);
    assert.equal(JSON.parse(answer!.body).detection, 'detected');
  });

  test('the front’s own refusal to a keep-alive HTTP/1.0 client says keep-alive and keeps the connection', async () => {
    const reply = await talk(server.port, [`PROPFIND /v2/models HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n`], atLeast(2));
    assert.deepEqual(responses(reply.text).map((r) => [r.status, r.headers.get('connection')]), [[405, 'keep-alive'], [200, 'keep-alive']]);
  });

  test('Transfer-Encoding from HTTP/1.0: 400 and close; two Host fields: 400', async () => {
    for (const fields of ['Transfer-Encoding: chunked\r\n', 'Host: a\r\nHost: b\r\n']) {
      const reply = await talk(server.port, [`POST /v2/predict HTTP/1.0\r\n${K}${fields}\r\n0\r\n\r\n`]);
      assert.equal(reply.closed, true);
      assert.deepEqual(responses(reply.text).map((r) => [r.status, r.headers.get('connection')]), [[400, 'close']], fields);
    }
  });
});

describe('other versions', () => {
  test('the HTTP/2 preface, HTTP/2.0 and HTTP/1.2 request lines: 505 and close', async () => {
    for (const request of ['PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', `GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n`, `GET /healthz HTTP/1.2\r\nHost: x\r\n\r\n`]) {
      const reply = await talk(server.port, [request]);
      assert.equal(reply.closed, true);
      assert.deepEqual(responses(reply.text).map((r) => r.status), [505], request);
    }
  });
});

describe('the answer writer', () => {
  const written = (framing: { close: boolean; http10: boolean; omitBody: boolean }) => {
    const socket = new PassThrough();
    writeAnswer(socket as unknown as net.Socket, '200 OK', 'X-A: 1\r\n', Buffer.from('hello'), framing);
    return (socket.read() as Buffer).toString('latin1');
  };

  test('HTTP/1.0: keep-alive when the connection stays, close when it ends; HTTP/1.1 says only close', () => {
    assert.equal(written({ close: false, http10: true, omitBody: false }), 'HTTP/1.1 200 OK\r\nX-A: 1\r\nContent-Length: 5\r\nConnection: keep-alive\r\n\r\nhello');
    assert.equal(written({ close: true, http10: true, omitBody: false }), 'HTTP/1.1 200 OK\r\nX-A: 1\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello');
    assert.equal(written({ close: false, http10: false, omitBody: false }), 'HTTP/1.1 200 OK\r\nX-A: 1\r\nContent-Length: 5\r\n\r\nhello');
    assert.equal(written({ close: true, http10: false, omitBody: false }), 'HTTP/1.1 200 OK\r\nX-A: 1\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello');
  });

  test("a HEAD request's answer has the body's length and no body bytes", () => {
    assert.equal(written({ close: false, http10: false, omitBody: true }), 'HTTP/1.1 200 OK\r\nX-A: 1\r\nContent-Length: 5\r\n\r\n');
  });
});
