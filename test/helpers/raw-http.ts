// Raw-socket HTTP for the front's tests: send exact bytes (optionally cut into segments) and read
// back the responses as they came, interim ones skipped, without any client library in between; and
// the same answer with what differs between two runs of a request (ids, dates, timings) masked.
import net from 'node:net';

export interface Reply {
  text: string;
  /** The server closed the connection. */
  closed: boolean;
}

/**
 * Sends `pieces` on a new connection, each once the previous one has been handed to the kernel and
 * the event loop has turned (so they leave as separate segments), and collects the answer until
 * `enough(text)` holds or the server closes the connection. Rejects after `limitMs`.
 */
export function talk(port: number, pieces: Array<string | Buffer>, enough: (text: string) => boolean = () => false, limitMs = 10_000): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    let text = '';
    let settled = false;
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closed });
    };
    const timer = setTimeout(() => {
      settled = true;
      socket.destroy();
      reject(new Error(`no complete answer within ${limitMs} ms; received ${JSON.stringify(text.slice(0, 400))}`));
    }, limitMs);
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      if (enough(text)) finish(false);
    });
    socket.on('close', () => finish(true));
    socket.on('error', () => undefined);
    socket.once('connect', async () => {
      for (const piece of pieces) {
        if (socket.destroyed) return;
        await new Promise<void>((resolve) => socket.write(piece, () => resolve()));
        await new Promise((resolve) => setImmediate(resolve));
      }
    });
  });
}

export interface Response {
  status: number;
  headers: Map<string, string>;
  body: string;
  /** The bytes of the whole response as received. */
  raw: string;
}

/** The complete responses at the start of `text`; `bodiless[i]`: the i-th answers a HEAD request. */
export function responses(text: string, bodiless: boolean[] = []): Response[] {
  const out: Response[] = [];
  let at = 0;
  while (at < text.length) {
    const end = text.indexOf('\r\n\r\n', at);
    if (end === -1) break;
    const lines = text.slice(at, end).split('\r\n');
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(lines[0]!)?.[1]);
    const headers = new Map<string, string>();
    for (const line of lines.slice(1)) headers.set(line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim());
    const interim = status < 200;
    const length = interim || bodiless[out.length] ? 0 : Number(headers.get('content-length') ?? 0);
    if (end + 4 + length > text.length) break;
    const response = { status, headers, body: text.slice(end + 4, end + 4 + length), raw: text.slice(at, end + 4 + length) };
    at = end + 4 + length;
    if (!interim) out.push(response);
  }
  return out;
}

export const atLeast = (n: number, bodiless: boolean[] = []) => (text: string) => responses(text, bodiless).length >= n;

/** What differs between two runs of the same request: ids, dates, timings. */
export function normalized(text: string): string {
  return text
    .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, 'ID')
    .replace(/^Date: .*$/gim, 'Date: D')
    .replace(/^Server-Timing: .*$/gim, 'Server-Timing: T')
    .replace(/"(latency_ms|score|confidence)":[0-9.e-]+/g, '"$1":N');
}
