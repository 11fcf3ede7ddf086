// A WebSocket upgrade request to the live stream (GET /v2/stream with `Upgrade: websocket`), handed
// over whole by the front that read its head to the stream server (stream/stream-server.ts) on its
// private unix socket: the head written again with the client's address in STREAM_PEER_FIELD (any
// such field the client sent is dropped), then the bytes both ways until either side closes. The
// front keeps no state of it but the socket. A stream server that cannot be reached gets the client
// a 503 in v2's error format.
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

/** Relays `client`, whose request `head` came from `peer`, to the stream server at `socketPath`; `rest`: bytes it sent after the head. */
export function relayUpgrade(client: net.Socket, head: RequestHead, peer: string, rest: Buffer[], socketPath: string): void {
  let text = `GET ${head.target} HTTP/1.1\r\n`;
  for (let i = 0; i < head.fields.length; i += 2) if (head.fields[i] !== STREAM_PEER_FIELD) text += `${head.fields[i]}: ${head.fields[i + 1]}\r\n`;
  text += `${STREAM_PEER_FIELD}: ${peer}\r\n\r\n`;
  const server = net.connect(socketPath);
  let connected = false;
  server.once('connect', () => (connected = true));
  // Written and piped at once (a socket holds writes until it connects), so no byte of the client's is missed.
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
  server.on('error', () => {
    if (connected || client.destroyed) return void client.destroy();
    client.unpipe(server);
    const answer = errorResponse(requestIdFrom(head.requestId), new ApiError('unavailable', 'Live streams are not being served.', {}, { 'Retry-After': '5' }));
    writeOwnAnswer(client, answer, { close: true, http10: false, omitBody: false });
    client.end();
  });
  client.on('error', () => server.destroy());
  client.on('close', () => server.destroy());
}
