// One HTTP request/response pair, as the front hands it to the service (front/linked-response.ts):
// the parsed head (http/request-head.ts), the body read with a hard limit, and one answer, safe to
// write after the client has gone away.
//
// An answer given before the request body has fully arrived (401, 413, ...) waits until the
// rest of the body has been received (or read and dropped by the front), so clients that upload
// first and read later still get the answer instead of a reset; one that closes the connection, or
// one to a request declaring more than MAX_DISCARD_BYTES, is sent at once.
import { STATUS_CODES } from 'node:http';
import { BadContentLengthError, BodyTooLargeError, ClientGoneError } from '../errors';
import { RequestTiming, serverTimingHeader } from '../timing/stage-times';
import type { ServiceHead } from './request-head';

/** A request's access line as its fields (the access log builds them; whoever writes the line formats them). */
export type AccessLineFields = Readonly<Record<string, unknown>>;

/** Where an exchange's answer goes: the front that holds the client's connection. */
export interface ResponseSink {
  /** `handler` is called once if the client leaves before the answer. */
  onAborted(handler: () => void): unknown;
  /** The body, once the front has it whole (`isLast`). */
  onData(handler: (chunk: Buffer, isLast: boolean) => void): unknown;
  /** The answer: status and reason (`200 OK`), field lines (each ending CRLF), body; `close`: the connection ends after it. */
  answer(status: string, fields: string, body: string | Buffer, close: boolean): void;
  /** Body bytes the client sent that no data handler saw (a request whose client left mid-body). */
  readonly bytesIn?: number;
  /**
   * Takes the request's access line (its fields) to be written where the answer is framed (a front
   * thread), when the answer has not gone yet; false: the caller writes it.
   */
  carryLine?(fields: AccessLineFields): boolean;
}

/** What the access log and the metrics read of a request that has ended (ops/access-log.ts recordRequest). */
export type EndedRequest = Pick<Exchange, 'answeredRequestId' | 'path' | 'method' | 'route' | 'peerAddress' | 'notes' | 'status' | 'startedAt' | 'bytesIn' | 'bytesOut' | 'stages' | 'header' | 'carryLine'>;

/** How a request's client leaving is heard (by the batcher): an AbortSignal, or an Exchange itself (no AbortController per request). */
export interface Leaving {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options: { once: true }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export const MAX_DISCARD_BYTES = 64 * 1024 * 1024;

type Sink = (chunk: Buffer, isLast: boolean) => void;

export class Exchange implements Leaving {
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly headers = new Map<string, string>();
  /** The client's IP address, as the HTTP front saw it (its peer-address field, not in `headers`). */
  readonly peerAddress: string;
  params: Readonly<Record<string, string>> = {};
  aborted = false;
  finished = false;
  /** When the request head arrived (performance.now()). */
  readonly startedAt: number;
  /** The route pattern that took the request; empty when none did. */
  route = '';
  /** The analyses this request ran hand their stage times here (Model.analyze's `timing`). */
  readonly timing = new RequestTiming();
  /** Set once the answer is written: each stage's milliseconds, as its Server-Timing header says. */
  stages: ReturnType<RequestTiming['stages']> | null = null;
  /** What handlers tell the access log: the model used and the detection outcome. */
  readonly notes: { model?: string; modelVersion?: string; detection?: string } = {};
  /** Set once the answer is written: its status, body size and X-Request-ID header. */
  status: number | null = null;
  bytesOut = 0;
  answeredRequestId: string | undefined;
  private readonly declaredLength: number | null;
  private bodyDone: boolean;
  private received = 0;
  private sink: Sink | null = null;
  private pendingWrite: (() => void) | null = null;
  private abortListeners: Array<() => void> = [];

  constructor(
    private readonly res: ResponseSink,
    req: ServiceHead,
    /** Called once when the exchange ends: response written or client gone. */
    private readonly settledHook: (ex: Exchange) => void = () => undefined,
    /** When the head arrived, if before now (a front thread's request). */
    startedAt = performance.now(),
  ) {
    this.startedAt = startedAt;
    this.method = req.method.toUpperCase();
    this.path = req.path;
    this.query = req.query;
    for (let i = 0; i + 1 < req.fields.length; i += 2) this.headers.set(req.fields[i]!, req.fields[i + 1]!);
    this.peerAddress = req.peer;
    const length = this.headers.get('content-length');
    this.declaredLength = length !== undefined && /^\d{1,15}$/.test(length) ? Number(length) : null;
    this.bodyDone = this.declaredLength === 0 || (length === undefined && !this.headers.has('transfer-encoding'));
    res.onAborted(() => {
      this.aborted = true;
      if (!this.finished || this.pendingWrite) this.onSettled();
      this.pendingWrite = null;
      for (const listener of this.abortListeners.splice(0)) listener();
    });
    // Attached now: a body nobody reads is received and discarded, so an answer sent later still
    // finds the request complete.
    this.attachData();
  }

  private onSettled(): void {
    this.settledHook(this);
  }

  /** Body bytes received so far. */
  get bytesIn(): number {
    return Math.max(this.received, this.res.bytesIn ?? 0);
  }

  header(name: string): string | undefined {
    return this.headers.get(name);
  }

  /** Hands the access line's fields to the transport that writes the answer, where it writes lines itself (ResponseSink.carryLine). */
  carryLine(fields: AccessLineFields): boolean {
    return this.res.carryLine?.(fields) ?? false;
  }

  /** The client disconnecting before the response is sent, heard as an AbortSignal is (Leaving), without one. */
  signal(): Leaving {
    return this;
  }

  /** An AbortSignal that fires when the client disconnects before the response is sent (for APIs that want a real one). */
  abortSignal(): AbortSignal {
    const controller = new AbortController();
    this.onAbort(() => controller.abort());
    return controller.signal;
  }

  /** As AbortSignal's: `listener` is called once if the client disconnects later (not if it already has). */
  addEventListener(_type: 'abort', listener: () => void): void {
    if (!this.aborted) this.abortListeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const index = this.abortListeners.indexOf(listener);
    if (index >= 0) this.abortListeners.splice(index, 1);
  }

  /** As addEventListener, but called at once if the client has already left. */
  private onAbort(listener: () => void): void {
    if (this.aborted) listener();
    else this.addEventListener('abort', listener);
  }

  private attachData(): void {
    if (this.bodyDone) return;
    this.res.onData((chunk, isLast) => {
      this.received += chunk.byteLength;
      this.sink?.(chunk, isLast);
      if (isLast) {
        this.bodyDone = true;
        this.flush();
      }
    });
  }

  private flush(): void {
    const write = this.pendingWrite;
    this.pendingWrite = null;
    if (write && !this.aborted) write();
  }

  /**
   * Reads the whole body. Must be called synchronously inside the handler (before any chunk).
   * Rejects with BodyTooLargeError past `limit` (declared or streamed), BadContentLengthError,
   * and ClientGoneError on abort. `borrow`: a whole body the transport keeps (a front's
   * body) may be given as it is, valid until the exchange ends, for a caller that reads it no later
   * or holds it (analyses do: Model.analyze); otherwise the body is the exchange's own copy.
   */
  readBody(limit: number, borrow = false): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const rawLength = this.headers.get('content-length');
      if (rawLength !== undefined && this.declaredLength === null) {
        reject(new BadContentLengthError());
        return;
      }
      if (this.bodyDone) {
        resolve(Buffer.alloc(0));
        return;
      }
      let settled = false;
      const settle = (fn: () => void) => {
        if (!settled) {
          settled = true;
          fn();
        }
      };
      this.onAbort(() => settle(() => reject(new ClientGoneError())));
      if (this.declaredLength !== null && this.declaredLength > limit) {
        settle(() => reject(new BodyTooLargeError(limit)));
        return;
      }
      // Preallocated when the length is known so each chunk is copied exactly once; a whole body
      // in one chunk that stays valid is taken as it is.
      let buffer: Buffer | null = null;
      let used = 0;
      this.sink = (chunk, isLast) => {
        if (settled) return;
        const size = chunk.byteLength;
        if (used + size > limit) {
          settle(() => reject(new BodyTooLargeError(limit)));
          return;
        }
        if (buffer === null) {
          if (isLast) return settle(() => resolve(borrow ? chunk : Buffer.from(chunk)));
          buffer = Buffer.allocUnsafe(this.declaredLength ?? 0);
        }
        if (used + size > buffer.length) {
          const grown = Buffer.allocUnsafe(Math.min(limit, Math.max(buffer.length * 2, used + size, 64 * 1024)));
          buffer.copy(grown, 0, 0, used);
          buffer = grown;
        }
        buffer.set(chunk, used);
        used += size;
        if (isLast) {
          const body = buffer.subarray(0, used);
          settle(() => resolve(body));
        }
      };
    });
  }

  /** Sends a complete response; see the note at the top about bodies still arriving. */
  send(status: number, headers: Record<string, string>, body: string | Buffer, closeAfter = false): void {
    if (this.aborted || this.finished) return;
    this.finished = true;
    const write = (close: boolean) => {
      this.stages = this.timing.stages(this.startedAt, performance.now());
      this.status = status;
      this.bytesOut = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
      this.answeredRequestId = headers['X-Request-ID'];
      this.onSettled();
      let fields = '';
      for (const name in headers) fields += `${name}: ${headers[name]!}\r\n`;
      this.res.answer(`${status} ${STATUS_CODES[status] ?? ''}`, `${fields}Server-Timing: ${serverTimingHeader(this.stages!)}\r\n`, body, close);
    };
    const tooMuchLeft = this.declaredLength === null ? this.received > MAX_DISCARD_BYTES : this.declaredLength > MAX_DISCARD_BYTES;
    if (this.bodyDone) write(closeAfter);
    else if (tooMuchLeft || closeAfter) {
      this.bodyDone = true;
      write(true);
    } else {
      this.sink = null;
      this.pendingWrite = () => write(false);
    }
  }
}
