// A live stream client for the tests (GET /v2/stream, docs/api-v2.md "Live stream"), on the ws package:
// its messages as they come (parsed), how it closed, and a wait for a number of messages.
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { TEST_KEY } from './server';

/** A stream client: its messages as they come (parsed), and how it closed. */
export class StreamClient {
  readonly socket: WebSocket;
  readonly messages: Array<Record<string, unknown>> = [];
  readonly opened: Promise<void>;
  readonly closed: Promise<{ code: number; reason: string }>;
  private waiters: Array<() => void> = [];

  constructor(baseUrl: string, headers: Record<string, string> = {}) {
    this.socket = new WebSocket(`${baseUrl.replace('http', 'ws')}/v2/stream`, { headers });
    this.opened = new Promise((resolve, reject) => {
      this.socket.once('open', () => resolve());
      this.socket.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => reject(new Error(`upgrade answered ${res.statusCode}: ${/"message":"([^"]*)"/.exec(body)?.[1] ?? body.slice(0, 120)}`)));
        res.on('error', () => reject(new Error(`upgrade answered ${res.statusCode}`)));
      });
      this.socket.once('error', reject);
    });
    this.closed = new Promise((resolve) => this.socket.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    this.socket.on('message', (data, isBinary) => {
      this.messages.push(isBinary ? { type: 'binary (never sent by the service)' } : (JSON.parse(data.toString()) as Record<string, unknown>));
      for (const wake of this.waiters.splice(0)) wake();
    });
    this.socket.on('close', () => {
      for (const wake of this.waiters.splice(0)) wake();
    });
  }

  /** Resolves once `count` messages have come (or the stream closed first). */
  async received(count: number): Promise<Array<Record<string, unknown>>> {
    while (this.messages.length < count && this.socket.readyState !== WebSocket.CLOSED) await new Promise<void>((wake) => this.waiters.push(wake));
    return this.messages;
  }
}

/** A stream opened at `baseUrl` and keyed with the tests' key (and `settings`): its settings answer has come. */
export async function keyedStream(baseUrl: string, settings: Record<string, unknown> = {}): Promise<StreamClient> {
  const client = new StreamClient(baseUrl);
  await client.opened;
  client.socket.send(JSON.stringify({ api_key: TEST_KEY, ...settings }));
  const [first] = await client.received(1);
  assert.equal(first!.type, 'settings');
  return client;
}

