// The one place an answer is framed for the client: the front's own answers (refusals, 429) and
// the service's alike. The status line is HTTP/1.1 (RFC 9110 §6.2, also to HTTP/1.0 clients); then the
// answer's fields, Content-Length (never chunked), and the connection's fate: `Connection: close` when
// it ends after this answer, `Connection: keep-alive` to an HTTP/1.0 client that keeps it (HTTP/1.0
// closes by default). A HEAD request's answer has no body bytes; its Content-Length is the body's.
import { STATUS_CODES } from 'node:http';
import type net from 'node:net';
import type { Answer } from '../http/error-answers';

let dateSecond = 0;
let dateText = '';
/** The Date field's value, made once a second. */
export function answerDate(): string {
  const now = Date.now();
  if (now - dateSecond >= 1000) {
    dateSecond = now - (now % 1000);
    dateText = new Date(dateSecond).toUTCString();
  }
  return dateText;
}

/** How one answer goes out. */
export interface Framing {
  /** A `Connection: close` field: the connection ends after this answer. */
  close: boolean;
  /** The client speaks HTTP/1.0: an answer that keeps the connection says so. */
  http10: boolean;
  /** The request was HEAD. */
  omitBody: boolean;
}

/** Writes one answer to `socket`: `status` with its reason (`200 OK`), `fields` (lines ending CRLF). */
export function writeAnswer(socket: net.Socket, status: string, fields: string, body: Buffer, framing: Framing): void {
  const connection = framing.close ? 'Connection: close\r\n' : framing.http10 ? 'Connection: keep-alive\r\n' : '';
  const head = `HTTP/1.1 ${status}\r\n${fields}Content-Length: ${body.length}\r\n${connection}\r\n`;
  if (framing.omitBody || body.length === 0) return void socket.write(head, 'latin1');
  socket.cork();
  socket.write(head, 'latin1');
  socket.write(body);
  socket.uncork();
}

/** The fields the service's answers end with (the field order its clients have always had). */
export function serviceFields(fields: string): string {
  return `${fields}Date: ${answerDate()}\r\nuWebSockets: 20\r\n`;
}

/** An answer of the front's own: Date first, then its fields. */
export function writeOwnAnswer(socket: net.Socket, answer: Answer, framing: Framing): void {
  let fields = `Date: ${answerDate()}\r\n`;
  for (const name in answer.headers) fields += `${name}: ${answer.headers[name]}\r\n`;
  writeAnswer(socket, `${answer.status} ${STATUS_CODES[answer.status] ?? ''}`, fields, Buffer.from(answer.body, 'utf8'), framing);
}
