// The main thread's side of a front thread's direct request (direct-exchange.ts): the forwarded
// head as the thread read it for the main thread, as uWS reads one (packHead), the body handed over
// whole as one chunk that stays valid until the exchange ends (a block lent from the thread's slab:
// body-slab.ts), and the answer's parts posted back for the thread to frame, with the request's
// access line for the thread to write (carryLine). An Exchange cannot tell it from uWS, so every
// route, limit, log line and metric is the same on both ways.
import type { LentRange } from '../lent-bytes';
import type { AccessLineFields, RequestSource, ResponseSink } from '../exchange';
import { IMAGE_MEMBER, noteMemberSpan } from '../json-image';
import { type DirectAnswerMessage, HEAD_SEPARATOR, NO_QUERY } from './direct-exchange';

export class DirectRequest implements RequestSource {
  private readonly parts: string[];

  /** `head`: packed on the thread (packHead). */
  constructor(head: string) {
    this.parts = head.split(HEAD_SEPARATOR);
  }

  getMethod(): string {
    return this.parts[0]!;
  }

  getUrl(): string {
    return this.parts[1]!;
  }

  getQuery(): string | undefined {
    const query = this.parts[2]!;
    return query === NO_QUERY ? undefined : query;
  }

  forEach(each: (name: string, value: string) => void): void {
    for (let i = 3; i + 1 < this.parts.length; i += 2) each(this.parts[i]!, this.parts[i + 1]!);
  }
}

export class DirectResponse implements ResponseSink {
  readonly keepsChunks = true;
  bytesIn = 0;
  private aborted: (() => void) | null = null;
  private data: ((chunk: ArrayBuffer | Buffer, isLast: boolean) => void) | null = null;
  /** The lent body, held until the response is over. */
  private body: LentRange | null = null;
  private status = '200 OK';
  private fields = '';
  /** The access line, carried to the thread with the answer. */
  private line: AccessLineFields | null = null;
  private done = false;

  constructor(
    private readonly id: number,
    /** Posts to the request's thread. */
    private readonly post: (message: DirectAnswerMessage) => void,
    /** Told once when the response is over: answered, dropped or aborted. */
    private readonly over: () => void,
    /** The answer carries the access line for the thread to write; false: the service writes it. */
    private readonly carriesLines = true,
  ) {}

  onAborted(handler: () => void): this {
    this.aborted = handler;
    return this;
  }

  onData(handler: (chunk: ArrayBuffer | Buffer, isLast: boolean) => void): this {
    this.data = handler;
    return this;
  }

  cork(write: () => void): this {
    write();
    return this;
  }

  writeStatus(status: string): this {
    this.status = status;
    return this;
  }

  writeHeader(name: string, value: string): this {
    this.fields += `${name}: ${value}\r\n`;
    return this;
  }

  end(body: string | Buffer, closeConnection: boolean): this {
    if (!this.finish()) return this;
    this.post({ type: 'direct-answer', id: this.id, status: this.status, fields: this.fields, body, close: closeConnection, line: this.line });
    return this;
  }

  close(): this {
    if (this.finish()) this.post({ type: 'direct-drop', id: this.id, line: this.line });
    return this;
  }

  /** The thread writes the line, as it comes with the answer (the service settles an exchange before ending it); not once the response is over. */
  carryLine(fields: AccessLineFields): boolean {
    if (this.done || !this.carriesLines) return false;
    this.line = fields;
    return true;
  }

  /** The whole body, once the handler has attached its reader (as uWS calls onData after the handler); `image`: where IMAGE_MEMBER's value lies. */
  deliver(body: LentRange, image: [number, number] | null): void {
    if (this.done) return body.letGo();
    this.body = body;
    if (image) noteMemberSpan(body.bytes, IMAGE_MEMBER, image);
    this.data?.(body.bytes, true);
  }

  /** The client left (or its thread ended), having sent `received` body bytes: as uWS's onAborted. */
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
