// The main thread's side of one direct way (direct-exchange.ts's DirectLink): a front thread's, or
// the main thread's own front's (local-direct.ts). Each request is served as uWS's handler serves one
// (direct-transport.ts), its body borrowed in place from the link's slab, and its answer posted back.
import type { RequestSource, ResponseSink } from '../exchange';
import { type Slab, SlabReader } from './body-slab';
import type { DirectAbortMessage, DirectAnswerMessage, DirectBody, DirectBodyMessage, DirectRequestMessage } from './direct-exchange';
import { DirectRequest, DirectResponse } from './direct-transport';

/** What the front side of a link sends. */
export type DirectMessage = DirectRequestMessage | DirectBodyMessage | DirectAbortMessage;

export interface DirectServiceOptions {
  slab: Slab;
  /** Posts an answer (or drop) to the link's front side. */
  post(message: DirectAnswerMessage): void;
  /** Serves a request as uWS's handler serves one; `startedAt` on performance.now()'s clock. */
  serve(res: ResponseSink, req: RequestSource, startedAt: number): void;
  /** The answers carry their access lines for the front side to write (a front thread); false: the service writes them. */
  carryLines: boolean;
}

export class DirectService {
  private readonly slab: SlabReader;
  /** Requests not answered yet, by id. */
  private readonly open = new Map<number, DirectResponse>();

  constructor(private readonly options: DirectServiceOptions) {
    this.slab = new SlabReader(options.slab);
  }

  receive(message: DirectMessage): void {
    if (message.type === 'direct-request') this.serve(message);
    else if (message.type === 'direct-body') this.deliver(message.id, message.body);
    else this.open.get(message.id)?.abort(message.received);
  }

  /** The front side is gone (its thread ended): every open request's client has left with it. */
  abortAll(): void {
    for (const res of [...this.open.values()]) res.abort();
  }

  private serve(message: DirectRequestMessage): void {
    const { id } = message;
    const res = new DirectResponse(id, this.options.post, () => this.open.delete(id), this.options.carryLines);
    this.open.set(id, res);
    this.options.serve(res, new DirectRequest(message.head), message.startedAt - performance.timeOrigin);
    if (message.body) this.deliver(id, message.body);
  }

  /** A body lent by the front side, to the request it is for (or given back at once when that has ended). */
  private deliver(id: number, [block, offset, length, imageStart, imageEnd]: DirectBody): void {
    const lent = this.slab.borrow({ block, offset, length });
    const res = this.open.get(id);
    if (res) res.deliver(lent, imageStart < 0 ? null : [imageStart, imageEnd]);
    else lent.letGo();
  }
}
