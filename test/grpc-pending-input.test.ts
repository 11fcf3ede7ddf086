// A gRPC answer waits for the loop to read what its connection had sent (src/oip/grpc/pending-input.ts):
// with bytes unread on the socket it is written only after a later turn of the loop, with none at
// once. A socket accepted with pauseOnConnect is never read, so what its peer sends stays in the
// kernel, unread, as with a busy loop.
import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import { loadAddon } from '../src/native/addon';
import { afterPendingInput } from '../src/oip/grpc/pending-input';
import { waitFor } from './helpers/wait';

async function connectedPair(): Promise<{ server: net.Socket; client: net.Socket; close(): void }> {
  const listener = net.createServer({ pauseOnConnect: true });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const accepted = new Promise<net.Socket>((resolve) => listener.once('connection', resolve));
  const client = net.connect((listener.address() as net.AddressInfo).port, '127.0.0.1');
  await new Promise((resolve) => client.once('connect', resolve));
  const server = await accepted;
  return {
    server,
    client,
    close: () => {
      client.destroy();
      server.destroy();
      listener.close();
    },
  };
}

function fdOf(socket: net.Socket): number {
  return (socket as unknown as { _handle: { fd: number } })._handle.fd;
}

test('with nothing unread the answer is written at once; with bytes unread, only after the loop has turned', async (t) => {
  const pair = await connectedPair();
  t.after(() => pair.close());
  const fd = fdOf(pair.server);

  let written = false;
  afterPendingInput(fd, () => (written = true));
  assert.equal(written, true, 'nothing unread: at once');

  pair.client.write(Buffer.alloc(64, 1));
  await waitFor('the bytes unread on the socket', () => loadAddon().pendingInputBytes(fd) === 64, { intervalMs: 5 });
  written = false;
  afterPendingInput(fd, () => (written = true));
  assert.equal(written, false, 'bytes unread: not now');
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(written, false, 'nor at the first turn, which may come before the loop reads its sockets');
  await waitFor('the answer written', () => written, { intervalMs: 1 });
});

test('no descriptor (grpc-js did not show one): at once', () => {
  let written = false;
  afterPendingInput(null, () => (written = true));
  assert.equal(written, true);
});
