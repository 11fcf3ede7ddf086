// An HTTP client for the proxy tests that picks its source address (node:http with localAddress,
// e.g. 127.0.0.2 for a guesser and 127.0.0.3 for a partner), a fresh connection per request; one
// raw HTTP/1.0 exchange (what ab sends, to show an answer ab only counted); and a reader of the
// service's access-log lines (JSON lines with msg "request") by request id.
import http from 'node:http';
import net from 'node:net';
import type { TestServer } from '../../test/helpers/server';
import { waitFor } from '../../test/helpers/wait';

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  /** The body as JSON, or null when it is not JSON. */
  body: any;
}

export interface CallOptions {
  method?: string;
  headers?: Record<string, string>;
  /** A value sent as JSON. */
  json?: unknown;
  /** Raw bytes sent as they are (the caller sets Content-Type); instead of `json`. */
  raw?: Buffer;
  /** Source address of the connection (default: the kernel's choice, 127.0.0.1). */
  from?: string;
  /** Sent as X-Request-ID, so the access-log line can be found. */
  requestId?: string;
  timeoutMs?: number;
}

/** One request on a new connection; rejects on a socket error or after timeoutMs (default 30 s). */
export function call(baseUrl: string, pathname: string, options: CallOptions = {}): Promise<Reply> {
  const url = new URL(pathname, baseUrl);
  const body = options.raw ?? (options.json === undefined ? undefined : Buffer.from(JSON.stringify(options.json)));
  const headers: Record<string, string | number> = { ...(options.headers ?? {}) };
  if (body !== undefined) {
    if (options.raw === undefined) headers['content-type'] = 'application/json';
    headers['content-length'] = body.length;
  }
  if (options.requestId !== undefined) headers['x-request-id'] = options.requestId;
  const timeoutMs = options.timeoutMs ?? 30_000;
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: options.method ?? (body === undefined ? 'GET' : 'POST'),
        headers,
        agent: false,
        ...(options.from !== undefined ? { localAddress: options.from } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = null;
          try {
            parsed = JSON.parse(text);
          } catch {
            parsed = null;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body: parsed });
        });
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`${req.method} ${url.href} from ${options.from ?? 'default'}: no answer in ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** "503 {...}" for assertion messages (the body cut at 600 characters). */
export function show(reply: Reply): string {
  return `${reply.status} ${reply.text.slice(0, 600)}`;
}

/** The service's access-log line for `requestId`, once written (it is written when the request ends). */
export function accessLogLine(server: TestServer, requestId: string, timeoutMs = 5_000): Promise<Record<string, unknown>> {
  const find = () => {
    for (const line of server.output().split('\n')) {
      if (!line.includes('"msg":"request"') || !line.includes(requestId)) continue;
      try {
        const entry = JSON.parse(line) as Record<string, unknown>;
        if (entry.msg === 'request' && entry.request_id === requestId) return entry;
      } catch {
        // the rest of the line is still on its way
      }
    }
    return null;
  };
  return waitFor(`the access-log line of request ${requestId}`, find, { timeoutMs, intervalMs: 20 });
}

/**
 * One HTTP/1.0 request with the fields ab sends (Host, User-Agent, Accept) on a raw socket;
 * resolves with the answer as text up to the close (cut at 1000 characters), or with what arrived
 * within 10 s.
 */
export function http10Exchange(baseUrl: string, method: string, pathname: string, headers: Record<string, string> = {}, body?: Buffer): Promise<string> {
  const url = new URL(pathname, baseUrl);
  const lines = [`${method} ${url.pathname} HTTP/1.0`, `Host: ${url.host}`, 'User-Agent: ApacheBench/2.3', 'Accept: */*'];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (body !== undefined) lines.push(`Content-Length: ${body.length}`);
  const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
  return new Promise((resolve) => {
    const socket = net.connect(Number(url.port), url.hostname);
    let text = '';
    const done = (note = '') => {
      clearTimeout(timer);
      socket.destroy();
      resolve(`${text.slice(0, 1000)}${note}`);
    };
    const timer = setTimeout(() => done(`\n(no close within 10 s)`), 10_000);
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    socket.on('end', () => done());
    socket.on('error', (error) => done(`\n(socket error: ${error.message})`));
    socket.write(body === undefined ? head : Buffer.concat([head, body]));
  });
}
