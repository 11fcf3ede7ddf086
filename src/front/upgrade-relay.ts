// A WebSocket upgrade request to the live stream (GET /v2/stream with `Upgrade: websocket`), handed
// over whole by the front that read its head to the stream server (stream/stream-server.ts) on its
// private unix socket: the head written again with the client's address in STREAM_PEER_FIELD (any
// such field the client sent is dropped), then the bytes both ways until either side closes. The
// front keeps no state of it but the socket. While the stream server's listen backlog is full (many
// upgrades at once) the front tries again for up to 2 s; a stream server that cannot be reached gets
// the client a 503 in v2's error format.
import net from 'node:net';
import { ApiError, requestIdFrom } from '../errors';
import { errorResponse } from '../http/error-answers';
import { writeOwnAnswer } from './answer-writer';
import type { RequestHead } from './head';

/** The live stream's path on the public port. */
export const STREAM_PATH = '/v2/stream';
/** The field the front adds to an upgrade request it hands over: the client's address as it judged it. */
export const STREAM_PEER_FIELD = 'x-catcomfort-stream-peer';

/** Whether `head` asks for the live stream's WebSocket (RFC 6455 §4.1: GET, HTTP/1.1, Upgrade and Connection). */
export function isStreamUpgrade(head: RequestHead): boolean {
  if (head.method !== 'GET' || head.path !== STREAM_PATH || head.http10) return false;
  let upgrade = false;
  let connection = false;
  for (let i = 0; i < head.fields.length; i += 2) {
    const value = head.fields[i + 1]!.toLowerCase();
    if (head.fields[i] === 'upgrade') upgrade ||= value.split(',').some((v) => v.trim() === 'websocket');
    else if (head.fields[i] === 'connection') connection ||= value.split(',').some((v) => v.trim() === 'upgrade');
  }
  return upgrade && connection;
}

/** How long the front keeps trying when the stream server's listen backlog is full (EAGAIN). */
const CONNECT_PATIENCE_MS = 2_000;
/** The first pause between tries; each next one twice as long, at most MAX_RETRY_PAUSE_MS. */
const FIRST_RETRY_PAUSE_MS = 5;
const MAX_RETRY_PAUSE_MS = 200;

/** Relays `client`, whose request `head` came from `peer`, to the stream server at `socketPath`; `rest`: bytes it sent after the head. */
export function relayUpgrade(client: net.Socket, head: RequestHead, peer: string, rest: Buffer[], socketPath: string): void {
  let text = `GET ${head.target} HTTP/1.1\r\n`;
  for (let i = 0; i < head.fields.length; i += 2) if (head.fields[i] !== STREAM_PEER_FIELD) text += `${head.fields[i]}: ${head.fields[i + 1]}\r\n`;
  text += `${STREAM_PEER_FIELD}: ${peer}\r\n\r\n`;
  // What the client sends meanwhile waits in its stream until the relay runs.
  client.pause();
  let server: net.Socket | null = null;
  let waitedMs = 0;
  let pauseMs = FIRST_RETRY_PAUSE_MS;
  const attempt = (): void => {
    if (client.destroyed) return;
    const trying = net.connect(socketPath);
    server = trying;
    const refused = (error: NodeJS.ErrnoException) => {
      trying.destroy();
      // A full backlog (many upgrades at once): the stream server is busy accepting, so try again shortly.
      if (error.code === 'EAGAIN' && waitedMs < CONNECT_PATIENCE_MS) {
        waitedMs += pauseMs;
        setTimeout(attempt, pauseMs);
        pauseMs = Math.min(pauseMs * 2, MAX_RETRY_PAUSE_MS);
        return;
      }
      unavailable(client, head);
    };
    trying.once('error', refused);
    trying.once('connect', () => {
      trying.off('error', refused);
      relay(client, trying, text, rest);
    });
  };
  client.on('error', () => server?.destroy());
  client.on('close', () => server?.destroy());
  attempt();
}

/** The bytes both ways between the client and the connected stream server, the head and `rest` first. */
function relay(client: net.Socket, server: net.Socket, text: string, rest: Buffer[]): void {
  server.write(text, 'latin1');
  for (const bytes of rest) server.write(bytes);
  client.pipe(server);
  server.pipe(client, { end: false });
  // The stream server closed (a close frame sent, or the connection dropped): the client's connection
  // ends once the last bytes are written to it, and what the client still sends is read and dropped
  // (a client still uploading an over-limit frame would otherwise wait on a full pipe forever).
  server.on('close', () => {
    client.unpipe(server);
    if (client.destroyed) return;
    client.resume();
    client.end(() => client.destroy());
  });
  server.on('error', () => client.destroy());
}

/** The stream server cannot be reached: 503 in v2's error format, and the connection ends. */
function unavailable(client: net.Socket, head: RequestHead): void {
  if (client.destroyed) return;
  const answer = errorResponse(requestIdFrom(head.requestId), new ApiError('unavailable', 'Live streams are not being served.', {}, { 'Retry-After': '5' }));
  writeOwnAnswer(client, answer, { close: true, http10: false, omitBody: false });
  client.end();
}
