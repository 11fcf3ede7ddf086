// A real webhook receiver on 127.0.0.1 for tests: it records every request (headers, body, when it
// began and ended) and answers as `answer` says for the n-th request (0-based): an HTTP status, or
// 'hold' (no answer until release() or the connection closes). It counts requests in flight per
// webhook-id, and the most ever in flight at once for one id.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: Record<string, string>;
  body: string;
  json: any;
  /** Settles when the request has been answered or its connection closed. */
  ended: Promise<void>;
}

export type Answer = number | { status: number; afterMs: number } | 'hold';

export interface Receiver {
  url: string;
  received: Received[];
  /** Requests with this webhook-id. */
  withId(webhookId: string): Received[];
  /** The most requests ever in flight at once with one webhook-id. */
  maxConcurrentPerId(): number;
  /** Requests being held now. */
  held(): number;
  /** Answers every held request (and later ones that would be held) with `status`. */
  release(status?: number): void;
  close(): Promise<void>;
}

export async function startReceiver(answer: (index: number, req: http.IncomingMessage) => Answer = () => 204): Promise<Receiver> {
  const received: Received[] = [];
  const inFlight = new Map<string, number>();
  let maxConcurrent = 0;
  let releasedWith: number | null = null;
  const holding = new Set<() => void>();
  const server = http.createServer((req, res) => {
    const index = received.length;
    const chunks: Buffer[] = [];
    const id = String(req.headers['webhook-id'] ?? '');
    inFlight.set(id, (inFlight.get(id) ?? 0) + 1);
    maxConcurrent = Math.max(maxConcurrent, inFlight.get(id)!);
    let endedResolve!: () => void;
    const record: Received = {
      headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
      body: '',
      json: null,
      ended: new Promise((r) => (endedResolve = r)),
    };
    received.push(record);
    let done = false;
    const end = () => {
      if (done) return;
      done = true;
      inFlight.set(id, inFlight.get(id)! - 1);
      endedResolve();
    };
    res.on('close', end);
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      record.body = Buffer.concat(chunks).toString('utf8');
      record.json = JSON.parse(record.body);
      const how = releasedWith ?? answer(index, req);
      const reply = (status: number) => res.destroyed || res.writeHead(status, { 'Content-Type': 'text/plain' }).end(`answer ${status}`);
      if (typeof how === 'number') return reply(how);
      if (how !== 'hold') {
        setTimeout(() => reply(how.status), how.afterMs);
        return;
      }
      const release = () => {
        holding.delete(release);
        reply(releasedWith ?? 204);
      };
      holding.add(release);
      res.on('close', () => holding.delete(release));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    withId: (webhookId) => received.filter((r) => r.headers['webhook-id'] === webhookId),
    maxConcurrentPerId: () => maxConcurrent,
    held: () => holding.size,
    release(status = 204) {
      releasedWith = status;
      for (const reply of [...holding]) reply();
    },
    close() {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}
