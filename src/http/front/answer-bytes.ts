// The HTTP front's own answers on the wire: status line HTTP/1.1 (RFC 9110 §6.2, also to HTTP/1.0
// clients), Date, the answer's fields, Content-Length (never chunked), and the connection's fate.
import { STATUS_CODES } from 'node:http';
import type { Answer } from '../error-answers';

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

/**
 * `close`: the connection ends after it (`Connection: close`); otherwise an HTTP/1.0 client is told
 * `Connection: keep-alive`, since HTTP/1.0 closes by default. `omitBody`: the request was HEAD.
 */
export function answerBytes(answer: Answer, close: boolean, http10: boolean, omitBody: boolean): Buffer {
  const body = Buffer.from(answer.body, 'utf8');
  let head = `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? ''}\r\nDate: ${answerDate()}\r\n`;
  for (const name in answer.headers) head += `${name}: ${answer.headers[name]}\r\n`;
  head += `Content-Length: ${body.length}\r\n`;
  if (close) head += 'Connection: close\r\n';
  else if (http10) head += 'Connection: keep-alive\r\n';
  return Buffer.concat([Buffer.from(head + '\r\n', 'latin1'), omitBody ? Buffer.alloc(0) : body]);
}
