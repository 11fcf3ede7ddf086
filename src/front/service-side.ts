// The service's side of one link (service-link.ts): a front thread's, or the main thread's own front's
// (local-link.ts). Each request is handed to the service with its head unpacked (http/request-head.ts)
// and a LinkedResponse, its body borrowed in place from the link's slab (or taken as handed over), and
// its answer posted back.
import type { ServiceHead } from '../http/request-head';
import { unpackHead } from '../http/request-head';
import type { ResponseSink } from '../http/exchange';
import { LentRange } from '../memory/lent-bytes';
import { type Slab, SlabReader } from './body-slab';
import type { AnswerMessage, LinkBody, RequestMessage, ToService } from './service-link';
import { LinkedResponse } from './linked-response';

export interface ServiceSideOptions {
  slab: Slab;
  /** Posts an answer to the link's front side. */
  post(message: AnswerMessage): void;
  /** Serves a request; `startedAt` on performance.now()'s clock. */
  serve(res: ResponseSink, head: ServiceHead, startedAt: number): void;
  /** Answers carry their access lines for the front side to write (a front thread); false: the service writes them. */
  carryLines: boolean;
}

const nothingToGiveBack = (): void => undefined;

export class ServiceSide {
  private readonly slab: SlabReader;
  /** Requests not answered yet, by id. */
  private readonly open = new Map<number, LinkedResponse>();

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
    const res = new LinkedResponse(id, this.options.post, () => this.open.delete(id), this.options.carryLines);
    this.open.set(id, res);
    this.options.serve(res, unpackHead(message.head), message.startedAt - performance.timeOrigin);
    if (body) this.deliver(id, body);
  }

  /** A body, to the request it is for (or given back at once when that has ended). */
  private deliver(id: number, body: LinkBody): void {
    const res = this.open.get(id);
    if ('dropped' in body) return res?.deliverDropped(body.dropped);
    const { lent, image } = this.borrow(body);
    if (res) res.deliver(lent, image);
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
