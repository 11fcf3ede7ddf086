// The direct way from a front thread to the service (front-threads.ts): a POST with a Content-Length
// body within the limit is posted to the main thread by the end of the turn of the thread's loop in
// which its head arrived (the forwarded head, so the service holds it from then on, as uWS would). Its
// body, read whole on the thread into a block of the slab it shares with the main thread
// (body-slab.ts), follows lent (not copied), in the same message when it came by then (most requests),
// with where v2's image member lies in it (json-image.ts), found here rather than on the main thread.
// The main thread serves it as uWS's handler does (direct-transport.ts) and posts the answer's parts
// back, which are framed here as uWS frames its answers and passed to the client through the same
// ResponseReader as uWS's bytes. So the main thread never reads the request's bytes off a socket,
// parses HTTP, or copies the body.
import { performance } from 'node:perf_hooks';
import type { AccessLineFields } from '../exchange';
import { IMAGE_MEMBER, locateMember } from '../json-image';
import { answerDate } from './answer-bytes';
import { type SlabBlock, SlabWriter } from './body-slab';
import type { RequestHead } from './head';
import { ResponseError, ResponseReader } from './response';
import type { ExchangeClient, UpstreamExchange } from './upstream-exchange';
import type { UpstreamPool } from './upstream-pool';
import { log } from '../../log';

/** What the client side uses of an exchange: the relay to uWS (upstream-exchange.ts) or this one. */
export type FrontExchange = Pick<UpstreamExchange, 'blocked' | 'forward' | 'resend' | 'write' | 'uncork' | 'resume' | 'release' | 'drop' | 'abandon'>;

/**
 * A whole body: its block of the thread's slab (SlabBlock's block, offset, length) and where
 * IMAGE_MEMBER's value lies in it (start -1: not the plain shape); numbers alone, the cheapest to post.
 */
export type DirectBody = readonly [block: number, offset: number, length: number, imageStart: number, imageEnd: number];

/** A request for the main thread: its forwarded head read as uWS reads it (packHead), and its whole body if it has come; `startedAt` on the epoch clock. */
export interface DirectRequestMessage {
  type: 'direct-request';
  id: number;
  head: string;
  startedAt: number;
  body: DirectBody | null;
}

/** Separates the parts of a packed head: a field value, a path or a query cannot hold it. */
export const HEAD_SEPARATOR = '\0';
/** A packed head's query when the target had no `?` (a target cannot hold it). */
export const NO_QUERY = '\x01';
const BLANKS = /^[ \t]+|[ \t]+$/g;

/**
 * The forwarded head (latin1) read as uWS reads it: method in lower case, path up to `?`, query
 * after it (NO_QUERY: none), then each field's name in lower case and value without surrounding
 * blanks, joined by HEAD_SEPARATOR; read here so the main thread only splits it (DirectRequest).
 */
export function packHead(head: string): string {
  const lines = head.split('\r\n');
  const [method = '', target = ''] = lines[0]!.split(' ');
  const mark = target.indexOf('?');
  const parts = [method.toLowerCase(), mark === -1 ? target : target.slice(0, mark), mark === -1 ? NO_QUERY : target.slice(mark + 1)];
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    const colon = line.indexOf(':');
    if (colon > 0) parts.push(line.slice(0, colon).toLowerCase(), line.slice(colon + 1).replace(BLANKS, ''));
  }
  return parts.join(HEAD_SEPARATOR);
}

/** The whole body of a request posted before it. */
export type DirectBodyMessage = { type: 'direct-body'; id: number; body: DirectBody };

/**
 * The answer's parts as the service wrote them (status text, field lines, body, whether it closes), or
 * `drop`: no answer; with either, the request's access line (its fields) for the thread to write, or null.
 */
export type DirectAnswerMessage =
  | { type: 'direct-answer'; id: number; status: string; fields: string; body: string | Uint8Array; close: boolean; line: AccessLineFields | null }
  | { type: 'direct-drop'; id: number; line: AccessLineFields | null };

/** The client left; `received`: the body bytes it had sent. */
export type DirectAbortMessage = { type: 'direct-abort'; id: number; received: number };

/** Whether a request may go the direct way: a POST whose whole body is known to fit, nothing to answer before it. */
export function goesDirect(head: RequestHead, maxBodyBytes: number): boolean {
  return head.method === 'POST' && !head.chunked && !head.expectContinue && head.contentLength > 0 && head.contentLength <= maxBodyBytes;
}

/** Where each request on the direct way holds a place: the front's pool of connections to uWS (upstream-pool.ts). */
export type Places = Pick<UpstreamPool, 'hasPlace' | 'takePlace' | 'givePlace'>;

/**
 * One front's requests on the direct way: each holds a place in the front's pool as a relayed one
 * holds a connection, so the pool's limit and queue apply to both ways alike; their bodies are in
 * the slab, so a client that declares large bodies and sends them slowly cannot make the front hold
 * more than the slab. A request with no free place, or whose body does not fit, is relayed to uWS.
 */
export class DirectLink {
  private nextId = 1;
  private readonly open = new Map<number, { exchange: DirectExchange; block: SlabBlock }>();
  /** Heads waiting for the rest of their bodies until this turn of the loop ends. */
  private readonly waiting = new Set<DirectExchange>();
  private flushing: NodeJS.Immediate | null = null;
  private places: Places | null = null;

  constructor(
    private readonly post: (message: DirectRequestMessage | DirectBodyMessage | DirectAbortMessage) => void,
    private readonly slab: SlabWriter,
  ) {}

  /** The front that takes this link gives it its pool (HttpFront's constructor). */
  holdPlacesIn(places: Places): void {
    this.places = places;
  }

  /** Whether a request with a body of `bytes` fits now. */
  fits(bytes: number): boolean {
    return this.places !== null && this.places.hasPlace() && this.slab.fits(bytes);
  }

  /** A place for one request with a body of `bytes` (its id and where to write the body), or null when it does not fit. */
  reserve(exchange: DirectExchange, bytes: number): { id: number; body: Buffer } | null {
    const block = this.places?.hasPlace() ? this.slab.place(bytes) : null;
    if (!block) return null;
    this.places!.takePlace();
    const id = this.nextId++;
    this.open.set(id, { exchange, block });
    return { id, body: this.slab.bytes(block) };
  }

  /** The request ends here; its place is given back, and its block, unless lent, is free again. */
  private close(id: number): DirectExchange | null {
    const entry = this.open.get(id);
    if (!entry) return null;
    this.open.delete(id);
    this.slab.free(entry.block);
    this.places!.givePlace();
    return entry.exchange;
  }

  sendHead(id: number, head: string, startedAt: number, body: Buffer | null): void {
    this.post({ type: 'direct-request', id, head, startedAt, body: body && this.lend(id, body) });
  }

  /** `exchange`'s head goes at the end of this turn of the loop, unless its whole body comes first (then both go as one message). */
  postLater(exchange: DirectExchange): void {
    this.waiting.add(exchange);
    this.flushing ??= setImmediate(() => {
      this.flushing = null;
      for (const waiting of [...this.waiting]) waiting.postHead();
    });
  }

  /** Whether `exchange`'s head waits for the end of this turn. */
  waits(exchange: DirectExchange): boolean {
    return this.waiting.has(exchange);
  }

  /** `exchange`'s head went: it no longer waits. */
  posted(exchange: DirectExchange): void {
    this.waiting.delete(exchange);
  }

  sendBody(id: number, body: Buffer): void {
    this.post({ type: 'direct-body', id, body: this.lend(id, body) });
  }

  private lend(id: number, body: Buffer): DirectBody {
    const { block } = this.open.get(id)!;
    this.slab.lend(block);
    const [start, end] = locateMember(body, IMAGE_MEMBER) ?? [-1, -1];
    return [block.block, block.offset, block.length, start, end];
  }

  /** The client left: the place is freed, and the service told if it has the request. */
  abort(id: number, sent: boolean, received: number): void {
    if (this.close(id) && sent) this.post({ type: 'direct-abort', id, received });
  }

  /** An answer (or drop) from the main thread. */
  answered(message: DirectAnswerMessage): void {
    this.close(message.id)?.answered(message); // none: its client left meanwhile
  }
}

export class DirectExchange implements FrontExchange {
  /** The current request's place in the link; 0 when none. */
  private id = 0;
  private head = '';
  private startedAt = 0;
  private body: Buffer | null = null;
  private used = 0;
  /** The head has been posted. */
  private posted = false;
  private readonly response = new ResponseReader();

  constructor(
    private readonly link: DirectLink,
    private readonly client: ExchangeClient,
  ) {}

  /** Never: the body is buffered here. */
  get blocked(): boolean {
    return false;
  }

  /** The current request's body is still arriving. */
  get receiving(): boolean {
    return this.body !== null;
  }

  /** Takes a request (its body follows through write; both are posted by uncork); false when the link is full. `refused` is never called: nothing waits. */
  forward(headBytes: Buffer, body: Buffer | null, head: RequestHead, sent: () => void): boolean {
    const place = this.link.reserve(this, head.contentLength);
    if (place === null) return false;
    this.id = place.id;
    this.head = packHead(headBytes.toString('latin1'));
    this.startedAt = performance.timeOrigin + performance.now();
    this.response.begin(false, head.http10 ? { keepAlive: !head.close } : null);
    this.body = place.body;
    this.used = 0;
    this.posted = false;
    if (body) this.write(body);
    sent();
    return true;
  }

  /** Never: only bodiless requests are sent again, and they go to uWS. */
  resend(): boolean {
    return false;
  }

  write(bytes: Buffer): boolean {
    if (!this.body) return false;
    bytes.copy(this.body, this.used);
    this.used += bytes.length;
    return true;
  }

  /** Posts what the last read brought: the head with the body if it is whole (else the head at the end of this turn: DirectLink.postLater), or the body once it is. */
  uncork(): void {
    if (this.id === 0) return;
    const body = this.body && this.used >= this.body.length ? this.body : null;
    if (body) this.body = null;
    if (!this.posted) {
      if (body) this.sendHead(body);
      else this.link.postLater(this);
    } else if (body) {
      this.link.sendBody(this.id, body);
    }
  }

  /** Posts the head, still without its whole body, if it waits (DirectLink.postLater). */
  postHead(): void {
    if (this.link.waits(this)) this.sendHead(null);
  }

  private sendHead(body: Buffer | null): void {
    this.posted = true;
    this.link.posted(this);
    this.link.sendHead(this.id, this.head, this.startedAt, body);
  }

  resume(): void {}

  /** Nothing is held once the answer is passed on. */
  release(): void {}

  drop(): void {
    this.abandon();
  }

  abandon(): void {
    this.postHead(); // the service hears of every request whose head it was to be told of, as it left
    if (this.id !== 0) this.link.abort(this.id, this.posted, this.used);
    this.id = 0;
    this.body = null;
  }

  answered(message: DirectAnswerMessage): void {
    this.id = 0;
    this.body = null; // an answer before the whole body (a closing one): the rest has nowhere to go
    if (message.type === 'direct-drop') return this.client.lost('dropped');
    const body = typeof message.body === 'string' ? Buffer.from(message.body, 'utf8') : Buffer.from(message.body.buffer, message.body.byteOffset, message.body.byteLength);
    // Framed as uWS frames an answer: the service's fields, then Connection, Date, its mark and the length.
    const head = `HTTP/1.1 ${message.status}\r\n${message.fields}${message.close ? 'Connection: close\r\n' : ''}Date: ${answerDate()}\r\nuWebSockets: 20\r\nContent-Length: ${body.length}\r\n\r\n`;
    let ended: boolean;
    try {
      ended = this.response.read(Buffer.concat([Buffer.from(head, 'utf8'), body]), (bytes) => this.client.write(bytes));
    } catch (error) {
      if (!(error instanceof ResponseError)) throw error;
      log.error('http front: unreadable answer from the service', { reason: error.message });
      return this.client.broken();
    }
    if (ended) this.client.answered(this.response.closeAfter);
  }
}
