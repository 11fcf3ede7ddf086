// One webhook attempt: a POST through the address-checked request, within `timeoutMs` from connect
// to the end of the answer. Redirects are not followed (a 3xx is just not an acknowledgement). Of
// the answer only the status and a short printable excerpt are kept.
import { guardedRequest, FetchRefusedError, type FetchPolicy } from '../fetch';
import { CALLBACK_WORDS } from './callback-url';

export const WEBHOOK_USER_AGENT = 'CatComfort-Webhooks/1.0';
/** Characters of the receiver's answer kept for the scan's log. */
export const EXCERPT_CHARS = 100;
const READ_BYTES = 1024;

export interface AttemptAnswer {
  status: number;
  /** The start of the answer's body, printable characters only. */
  excerpt: string;
}

function printable(bytes: Buffer): string {
  const text = bytes.toString('utf8').replace(/[^\x20-\x7e]+/g, ' ').trim();
  return text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text;
}

/** Posts `body`; resolves with the answer, rejects with FetchRefusedError (refused, network, timeout). */
export async function postWebhook(
  url: string,
  body: string,
  headers: Record<string, string>,
  policy: FetchPolicy,
  timeoutMs: number,
): Promise<AttemptAnswer> {
  const deadline = AbortSignal.timeout(timeoutMs);
  const timeoutError = () => new FetchRefusedError('timeout', `no answer from the callback host within ${timeoutMs} ms`);
  const response = await guardedRequest(new URL(url), policy, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'User-Agent': WEBHOOK_USER_AGENT, ...headers },
    body: Buffer.from(body),
    words: CALLBACK_WORDS,
    deadline,
    timeoutError,
  });
  const status = response.statusCode ?? 0;
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let read = 0;
    const done = () => {
      deadline.removeEventListener('abort', onDeadline);
      response.destroy();
      resolve({ status, excerpt: printable(Buffer.concat(chunks)) });
    };
    const onDeadline = () => {
      response.destroy();
      reject(timeoutError());
    };
    deadline.addEventListener('abort', onDeadline, { once: true });
    response.on('data', (chunk: Buffer) => {
      if (read >= READ_BYTES) return;
      chunks.push(chunk.subarray(0, READ_BYTES - read));
      read += chunk.length;
      if (read >= READ_BYTES) done();
    });
    response.on('end', done);
    // An answer cut short still carried its status: the excerpt is what arrived.
    response.on('error', done);
  });
}
