// Where an Exchange's answer goes (http/exchange.ts ResponseSink): back over the link to the front
// that holds the client's connection (service-link.ts), as the answer's parts for the front to frame,
// with the request's access line for a front thread to write (carryLine). It hands the Exchange the
// whole body once the front has it: borrowed in place from the link's slab until the exchange ends.
import type { AccessLineFields, ResponseSink } from '../http/exchange';
import { IMAGE_MEMBER, noteMemberSpan } from '../http/json-image';
import type { LentRange } from '../memory/lent-bytes';
import type { AnswerMessage } from './service-link';

const EMPTY = Buffer.alloc(0);

export class LinkedResponse implements ResponseSink {
  bytesIn = 0;
  private aborted: (() => void) | null = null;
  private data: ((chunk: Buffer, isLast: boolean) => void) | null = null;
  /** The lent body, held until the response is over. */
  private body: LentRange | null = null;
  /** The access line, carried to the thread with the answer. */
  private line: AccessLineFields | null = null;
  private done = false;

  constructor(
    private readonly id: number,
    /** Posts to the request's front. */
    private readonly post: (message: AnswerMessage) => void,
    /** Told once when the response is over: answered or aborted. */
    private readonly over: () => void,
    /** The answer carries the access line for the thread to write; false: the service writes it. */
    private readonly carriesLines = true,
  ) {}

  onAborted(handler: () => void): this {
    this.aborted = handler;
    return this;
  }

  onData(handler: (chunk: Buffer, isLast: boolean) => void): this {
    this.data = handler;
    return this;
  }

  answer(status: string, fields: string, body: string | Buffer, close: boolean): void {
    if (this.finish()) this.post({ type: 'answer', id: this.id, status, fields, body, close, line: this.line });
  }

  /** The thread writes the line, as it comes with the answer (the service settles an exchange before ending it); not once the response is over. */
  carryLine(fields: AccessLineFields): boolean {
    if (this.done || !this.carriesLines) return false;
    this.line = fields;
    return true;
  }

  /** The whole body, once the handler has attached its reader; `image`: where IMAGE_MEMBER's value lies. */
  deliver(body: LentRange, image: [number, number] | null): void {
    if (this.done) return body.letGo();
    this.body = body;
    if (image) noteMemberSpan(body.bytes, IMAGE_MEMBER, image);
    this.data?.(body.bytes, true);
  }

  /** The body was over the limit: the front read `received` bytes of it and dropped them. */
  deliverDropped(received: number): void {
    if (this.done) return;
    this.bytesIn = received;
    this.data?.(EMPTY, true);
  }

  /** The client left (or its thread ended), having sent `received` body bytes. */
  abort(received = 0): void {
    this.bytesIn = received;
    if (this.finish()) this.aborted?.();
  }

  private finish(): boolean {
    if (this.done) return false;
    this.done = true;
    this.body?.letGo();
    this.body = null;
    this.over();
    return true;
  }
}
