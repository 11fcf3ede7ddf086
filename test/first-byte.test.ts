// A new connection may wait for its first byte longer than the idle limit (60 s, or the limit if
// longer: src/front/client-connection.ts), since a burst past the listen backlog can delay a
// request's first packets by many seconds; from its first byte on, the idle limit applies. With a
// 1-s limit: a connection that sent half a head, and one idle after an answer, are closed; a silent
// one opened before them is still open after both, and is answered when it speaks.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { atLeast, responses, talk } from './helpers/raw-http';
import { startServer, type TestServer } from './helpers/server';

let server: TestServer;

before(async () => {
  server = await startServer({ CATCOMFORT_CLIENT_IDLE_TIMEOUT_MS: '1000' });
});

after(async () => {
  await server?.stop();
});

test('a silent new connection outlasts the idle limit; half a head and an idle keep-alive do not', async () => {
  const silent = net.connect(server.port, '127.0.0.1');
  let silentClosed = false;
  silent.on('close', () => (silentClosed = true));
  silent.on('error', () => undefined);
  await new Promise((resolve) => silent.once('connect', resolve));

  const [halfHead, idleAfterAnswer] = await Promise.all([
    talk(server.port, ['GET /healthz HTTP/1.1\r\nHost: t\r\n'], () => false, 30_000),
    talk(server.port, ['GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n'], () => false, 30_000),
  ]);
  assert.equal(halfHead.closed, true);
  assert.equal(responses(halfHead.text)[0]?.status, 408, halfHead.text);
  assert.equal(idleAfterAnswer.closed, true);
  assert.equal(responses(idleAfterAnswer.text)[0]?.status, 200, idleAfterAnswer.text);

  assert.equal(silentClosed, false, 'the silent connection is still open after the idle limit closed the others');
  let text = '';
  silent.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  silent.write('GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n');
  await new Promise<void>((resolve, reject) => {
    const check = () => (atLeast(1)(text) ? resolve() : silentClosed ? reject(new Error(`closed: ${text}`)) : undefined);
    silent.on('data', check);
    silent.on('close', check);
  });
  assert.equal(responses(text)[0]?.status, 200, text);
  silent.destroy();
});
