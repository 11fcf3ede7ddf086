// The service's side of one link (service-link.ts): a front thread's, or the main thread's own front's
// (local-link.ts). Each request is handed to the service with its head unpacked (http/request-head.ts)
// and a LinkedResponse, its body borrowed in place from the link's slab (or taken as handed over), and
// its answer posted back. A hot route's request (http/hot-route.ts) is served without its head when
// the service takes it (serveHot), else the usual way.
import type { HotRequest } from '../http/hot-route';
import type { ServiceHead } from '../http/request-head';
import { unpackHead } from '../http/request-head';
import type { ResponseSink } from '../http/exchange';
import { LentRange } from '../memory/lent-bytes';
import { type Slab, SlabReader } from './body-slab';
import type { AnswerMessage, LinkBody, RequestMessage, ToService } from './service-link';
import { LinkedResponse } from './linked-response';
import { log } from '../log';

/** What the service answers a hot request with: its findings, or an answer's parts. */
export type HotReply = Omit<Extract<AnswerMessage, { type: 'hot' }>, 'id'> | Omit<Extract<AnswerMessage, { type: 'answer' }>, 'id'>;

/** A hot request the service has taken: the client may leave. */
export interface HotCall {
  abort(): void;
}

export interface ServiceSideOptions {
  slab: Slab;
  /** Posts an answer to the link's front side. */
  post(message: AnswerMessage): void;
  /** Serves a request; `startedAt` on performance.now()'s clock. */
  serve(res: ResponseSink, head: ServiceHead, startedAt: number): void;
  /** Serves a hot request with its whole body, replying once (not after abort); null: it takes the usual way. */
  serveHot(request: HotRequest, body: Buffer, startedAt: number, reply: (answer: HotReply) => void): HotCall | null;
  /** The usual way's answers carry their access lines for the front side to write (a front thread); false: the service writes them. Hot answers always carry theirs. */
  carryLines: boolean;
}

const nothingToGiveBack = (): void => undefined;

export class ServiceSide {
  private readonly slab: SlabReader;
  /** Requests not answered yet, by id. */
  private readonly open = new Map<number, { abort(received?: number): void }>();

  constructor(private readonly options: ServiceSideOptions) {
    this.slab = new SlabReader(options.slab);
  }

  receive(message: ToService): void {
    if (message.type === 'request') this.serve(message);
    else if (message.type === 'body') this.deliver(message.id, message.body);
    else this.open.get(message.id)?.abort(message.received);
  }

  /** The front side is gone (its thread ended): every open request's client has left with it. */
  abortAll(): void {
    for (const request of [...this.open.values()]) request.abort();
  }

  private serve(message: RequestMessage): void {
    const { id, body } = message;
    const startedAt = message.startedAt - performance.timeOrigin;
    // Borrowed once: the hot way holds it, or the usual way does.
    const whole = body && !('dropped' in body) ? this.borrow(body) : null;
    if (message.hot && whole && this.serveHot(id, message.hot, whole.lent, startedAt)) return;
    const res = new LinkedResponse(id, this.options.post, () => this.open.delete(id), this.options.carryLines);
    this.open.set(id, res);
    this.options.serve(res, unpackHead(message.head), startedAt);
    if (whole) res.deliver(whole.lent, whole.image);
    else if (body) this.deliver(id, body);
  }

  /** Whether the service took the hot request; if so, it holds `lent` until it is answered or its client leaves. */
  private serveHot(id: number, request: HotRequest, lent: LentRange, startedAt: number): boolean {
    let call: HotCall | null = null;
    let done = false;
    const over = (): boolean => {
      if (done) return false;
      done = true;
      this.open.delete(id);
      lent.letGo();
      return true;
    };
    // Open before the service sees it, so that an answer it gives at once finds it.
    this.open.set(id, { abort: () => over() && call?.abort() });
    try {
      call = this.options.serveHot(request, lent.bytes, startedAt, (answer) => {
        if (over()) this.options.post({ ...answer, id } as AnswerMessage);
      });
    } catch (error) {
      log.error('hot route failed; the usual way serves the request', { error: (error as Error)?.stack ?? String(error) });
    }
    if (call) return true;
    this.open.delete(id);
    return false;
  }

  /** A body, to the request it is for (or given back at once when that has ended). */
  private deliver(id: number, body: LinkBody): void {
    const res = this.open.get(id);
    if ('dropped' in body) return void (res instanceof LinkedResponse && res.deliverDropped(body.dropped));
    const { lent, image } = this.borrow(body);
    if (res instanceof LinkedResponse) res.deliver(lent, image);
    else lent.letGo();
  }

  private borrow(body: Exclude<LinkBody, { dropped: number }>): { lent: LentRange; image: [number, number] | null } {
    if ('bytes' in body) {
      const lent = new LentRange(Buffer.from(body.bytes.buffer, body.bytes.byteOffset, body.bytes.byteLength), nothingToGiveBack);
      return { lent, image: body.imageStart < 0 ? null : [body.imageStart, body.imageEnd] };
    }
    const [block, offset, length, imageStart, imageEnd] = body;
    return { lent: this.slab.borrow({ block, offset, length }), image: imageStart < 0 ? null : [imageStart, imageEnd] };
  }
}
