// The way from a front to the service, the only one every HTTP request takes: a front thread's to the
// main thread (front-threads.ts), or the main thread's own front's (local-link.ts). Once a request has
// a place (places.ts), its head, parsed once by the front and packed (head.ts serviceHead), is posted
// by the end of the turn of the loop in which it arrived, so the service holds it from then on. Its
// body is read whole on the front's side into a block of the slab it shares with the main thread
// (body-slab.ts), or, when the slab has no room, into memory of its own that is handed over; it follows
// lent (not copied), in the same message when it came by then (most requests), with where v2's image
// member lies in it (json-image.ts), found here rather than on the main thread. A body over the limit is
// read and dropped here, and the service told how much came. The service's answer comes back as its
// parts and is framed by the front (answer-writer.ts). So the main thread never reads a request's bytes
// off a socket, parses HTTP, or copies a body. The front writes the access lines that come with answers.
import { performance } from 'node:perf_hooks';
import type { AccessLineFields } from '../http/exchange';
import { IMAGE_MEMBER, locateMember } from '../http/json-image';
import { writeRequestLine } from '../http/request-line';
import { type SlabBlock, SlabWriter } from './body-slab';
import type { Places } from './places';

/**
 * A whole body: its block of the thread's slab (SlabBlock's block, offset, length) and where
 * IMAGE_MEMBER's value lies in it (start -1: not the plain shape); numbers alone, the cheapest to post.
 */
export type SlabBody = readonly [block: number, offset: number, length: number, imageStart: number, imageEnd: number];
/** A whole body in memory of its own (handed over with the message), or the count of body bytes read and dropped. */
export type OwnBody = { bytes: Uint8Array; imageStart: number; imageEnd: number };
export type DroppedBody = { dropped: number };
export type LinkBody = SlabBody | OwnBody | DroppedBody;

/** A request for the service: its head packed (http/request-head.ts), its body if it has come; `startedAt` on the epoch clock. */
export interface RequestMessage {
  type: 'request';
  id: number;
  head: string;
  startedAt: number;
  body: LinkBody | null;
}

/** The whole body of a request posted before it. */
export type BodyMessage = { type: 'body'; id: number; body: LinkBody };

/** The client left; `received`: the body bytes it had sent. */
export type AbortMessage = { type: 'abort'; id: number; received: number };

/** What a front posts to the service. */
export type ToService = RequestMessage | BodyMessage | AbortMessage;

/**
 * The answer's parts as the service wrote them (status and reason, field lines, body, whether it
 * closes) with the request's access line (its fields) for the front to write, or null.
 */
export type AnswerMessage = { type: 'answer'; id: number; line: AccessLineFields | null } & ServiceAnswer;

/** How a request's body reaches the service. */
export const enum BodyWay {
  /** It has none. */
  None,
  /** Read whole, then lent. */
  Whole,
  /** Over the limit: read and dropped. */
  Dropped,
}

/** The client side of one exchange, as the link sees it: it takes the answer's parts. */
export type ExchangeClient = (answer: ServiceAnswer) => void;

/** An answer's parts as the service wrote them. */
export type ServiceAnswer = { status: string; fields: string; body: string | Uint8Array; close: boolean };

/** One front's way to the service: its requests' ids, their slab blocks, and the heads waiting for the end of a turn. */
export class ServiceLink {
  private nextId = 1;
  private readonly open = new Map<number, { exchange: ServiceExchange; block: SlabBlock | null }>();
  /** Heads waiting for the rest of their bodies until this turn of the loop ends. */
  private readonly waiting = new Set<ServiceExchange>();
  private flushing: NodeJS.Immediate | null = null;

  constructor(
    private readonly post: (message: ToService, transfer?: ArrayBuffer[]) => void,
    private readonly slab: SlabWriter,
    readonly places: Places,
  ) {}

  /** An id for a request whose body is `bytes` long (0: none), and where to write its body when it is lent. */
  enter(exchange: ServiceExchange, bytes: number): { id: number; body: Buffer | null } {
    const id = this.nextId++;
    const block = bytes > 0 ? this.slab.place(bytes) : null;
    this.open.set(id, { exchange, block });
    const body = block ? this.slab.bytes(block) : bytes > 0 ? Buffer.from(new ArrayBuffer(bytes)) : null;
    return { id, body };
  }

  /** The request ends here; its place is given back, and its block, unless lent, is free again. */
  private close(id: number): ServiceExchange | null {
    const entry = this.open.get(id);
    if (!entry) return null;
    this.open.delete(id);
    if (entry.block) this.slab.free(entry.block);
    this.places.give();
    return entry.exchange;
  }

  sendHead(id: number, head: string, startedAt: number, body: Buffer | DroppedBody | null): void {
    const transfer: ArrayBuffer[] = [];
    this.post({ type: 'request', id, head, startedAt, body: body && this.lend(id, body, transfer) }, transfer);
  }

  sendBody(id: number, body: Buffer | DroppedBody): void {
    const transfer: ArrayBuffer[] = [];
    this.post({ type: 'body', id, body: this.lend(id, body, transfer) }, transfer);
  }

  /** `exchange`'s head goes at the end of this turn of the loop, unless its whole body comes first (then both go as one message). */
  postLater(exchange: ServiceExchange): void {
    this.waiting.add(exchange);
    this.flushing ??= setImmediate(() => {
      this.flushing = null;
      for (const waiting of [...this.waiting]) waiting.postHead();
    });
  }

  /** Whether `exchange`'s head waits for the end of this turn. */
  waits(exchange: ServiceExchange): boolean {
    return this.waiting.has(exchange);
  }

  /** `exchange`'s head went: it no longer waits. */
  posted(exchange: ServiceExchange): void {
    this.waiting.delete(exchange);
  }

  private lend(id: number, body: Buffer | DroppedBody, transfer: ArrayBuffer[]): LinkBody {
    if (!Buffer.isBuffer(body)) return body;
    const [imageStart, imageEnd] = locateMember(body, IMAGE_MEMBER) ?? [-1, -1];
    const { block } = this.open.get(id)!;
    if (!block) {
      transfer.push(body.buffer as ArrayBuffer);
      return { bytes: new Uint8Array(body.buffer, body.byteOffset, body.length), imageStart, imageEnd };
    }
    this.slab.lend(block);
    return [block.block, block.offset, block.length, imageStart, imageEnd];
  }

  /** The client left: the place is freed, and the service told if it has the request. */
  abort(id: number, sent: boolean, received: number): void {
    if (this.close(id) && sent) this.post({ type: 'abort', id, received });
  }

  /** An answer from the service; its access line is written here, also when its client has left meanwhile. */
  answered(message: AnswerMessage): void {
    const exchange = this.close(message.id);
    if (message.line) writeRequestLine(message.line);
    exchange?.answered(message);
  }
}

/** One client connection's exchange with the service, a request at a time. */
export class ServiceExchange {
  /** The current request's id in the link; 0 when none. */
  private id = 0;
  private head = '';
  private startedAt = 0;
  private way = BodyWay.None;
  /** Where the body is written (BodyWay.Whole), until it is whole. */
  private body: Buffer | null = null;
  /** Body bytes read so far, of `expected`. */
  private used = 0;
  private expected = 0;
  /** The head has been posted; the whole body has. */
  private posted = false;
  private bodyPosted = false;
  /** Leaves the queue of places (while the request waits for one). */
  private cancel: (() => void) | null = null;

  constructor(
    private readonly link: ServiceLink,
    private readonly answer: ExchangeClient,
  ) {}

  /** The current request's body is still arriving. */
  get receiving(): boolean {
    return this.id !== 0 && this.used < this.expected;
  }

  /**
   * Takes a request (a place in the link, now or once one is free: `granted`), its head packed, its body
   * of `bytes` to come through write (`way`); `expired`: no place came in time. False when the queue is full.
   */
  begin(head: string, bytes: number, way: BodyWay, granted: () => void, expired: () => void): boolean {
    const leave = this.link.places.acquire(() => {
      this.cancel = null;
      const place = this.link.enter(this, way === BodyWay.Whole ? bytes : 0);
      this.id = place.id;
      this.head = head;
      this.startedAt = performance.timeOrigin + performance.now();
      this.way = way;
      this.body = place.body;
      this.used = 0;
      this.expected = way === BodyWay.None ? 0 : bytes;
      this.posted = false;
      this.bodyPosted = way === BodyWay.None;
      granted();
    }, () => {
      this.cancel = null;
      expired();
    });
    if (leave === null) return false;
    if (this.id === 0) this.cancel = leave;
    return true;
  }

  /** Body bytes for the current request; false when it has been answered already (they have nowhere to go). */
  write(bytes: Buffer): boolean {
    if (this.id === 0) return false;
    if (this.body) bytes.copy(this.body, this.used);
    this.used += bytes.length;
    return true;
  }

  /** Posts what the last read brought: the head with the body if it is whole (else the head at the end of this turn: ServiceLink.postLater), or the body once it is. */
  uncork(): void {
    if (this.id === 0) return;
    const body = !this.bodyPosted && this.used >= this.expected ? this.wholeBody() : null;
    if (!this.posted) {
      if (this.bodyPosted) this.sendHead(body);
      else this.link.postLater(this);
    } else if (body) {
      this.link.sendBody(this.id, body);
    }
  }

  /** The whole body, once. */
  private wholeBody(): Buffer | DroppedBody {
    this.bodyPosted = true;
    const body = this.way === BodyWay.Whole ? this.body! : { dropped: this.used };
    this.body = null;
    return body;
  }

  /** Posts the head, still without its whole body, if it waits (ServiceLink.postLater). */
  postHead(): void {
    if (this.link.waits(this)) this.sendHead(null);
  }

  private sendHead(body: Buffer | DroppedBody | null): void {
    this.posted = true;
    this.link.posted(this);
    this.link.sendHead(this.id, this.head, this.startedAt, body);
  }

  /** The client left, or the connection ends: the service hears of a request it has, and its place is freed. */
  abandon(): void {
    this.cancel?.();
    this.cancel = null;
    this.postHead(); // the service hears of every request whose head it was to be told of, as it left
    if (this.id !== 0) this.link.abort(this.id, this.posted, this.used);
    this.id = 0;
    this.body = null;
  }

  /** The request has ended: an answer before the whole body (a closing one) leaves the rest nowhere to go. */
  answered(answer: ServiceAnswer): void {
    this.id = 0;
    this.body = null;
    this.answer(answer);
  }
}
