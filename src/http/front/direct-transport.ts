// The main thread's side of a front thread's direct request (direct-exchange.ts): the forwarded
// head read as uWS reads it (method in lower case, path up to `?`, query after it, field names in
// lower case and values without surrounding blanks), the body handed over whole as one chunk that
// stays valid until the exchange ends (a block lent from the thread's slab: body-slab.ts), and the
// answer's parts posted back for the thread to frame. An Exchange cannot tell
// it from uWS, so every route, limit, log line and metric is the same on both ways.
import type { LentRange } from '../../pipeline/lent-bytes';
import type { RequestSource, ResponseSink } from '../exchange';
import { IMAGE_MEMBER, noteMemberSpan } from '../json-image';
import type { DirectAnswerMessage } from './direct-exchange';

const BLANKS = /^[ \t]+|[ \t]+$/g;

export class DirectRequest implements RequestSource {
  private readonly lines: string[];
  private readonly method: string;
  private readonly url: string;
  private readonly query: string | undefined;

  constructor(head: string) {
    this.lines = head.split('\r\n');
    const [method = '', target = ''] = this.lines[0]!.split(' ');
    const mark = target.indexOf('?');
    this.method = method.toLowerCase();
    this.url = mark === -1 ? target : target.slice(0, mark);
    this.query = mark === -1 ? undefined : target.slice(mark + 1);
  }

  getMethod(): string {
    return this.method;
  }

  getUrl(): string {
    return this.url;
  }

  getQuery(): string | undefined {
    return this.query;
  }

  forEach(each: (name: string, value: string) => void): void {
    for (let i = 1; i < this.lines.length; i++) {
      const line = this.lines[i]!;
      const colon = line.indexOf(':');
      if (colon > 0) each(line.slice(0, colon).toLowerCase(), line.slice(colon + 1).replace(BLANKS, ''));
    }
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
  private done = false;

  constructor(
    private readonly id: number,
    /** Posts to the request's thread. */
    private readonly post: (message: DirectAnswerMessage) => void,
    /** Told once when the response is over: answered, dropped or aborted. */
    private readonly over: () => void,
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
    this.post({ type: 'direct-answer', id: this.id, status: this.status, fields: this.fields, body, close: closeConnection });
    return this;
  }

  close(): this {
    if (this.finish()) this.post({ type: 'direct-drop', id: this.id });
    return this;
  }

  /** The whole body, once the handler has attached its reader (as uWS calls onData after the handler); `image`: where IMAGE_MEMBER's value lies. */
  deliver(body: LentRange, image: [number, number] | null): void {
    if (this.done) return body.letGo();
    this.body = body;
    noteMemberSpan(body.bytes, IMAGE_MEMBER, image);
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
