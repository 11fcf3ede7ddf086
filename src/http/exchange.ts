// One HTTP request/response pair over uWS (or a front thread's direct request, which acts as uWS
// does: front/direct-transport.ts). Copies what it needs from the stack-bound HttpRequest up front,
// reads the body with a hard limit, and makes every write corked and safe after the client has gone away.
//
// An answer given before the request body has fully arrived (401, 413, ...) waits until the
// rest of the body has been received and discarded, so clients that upload first and read
// later still get the answer instead of a reset; past MAX_DISCARD_BYTES it is sent at once
// and the connection closed.
import { STATUS_CODES } from 'node:http';
import { BadContentLengthError, BodyTooLargeError, ClientGoneError } from '../errors';
import { RequestTiming, serverTimingHeader } from '../timing/stage-times';
import { PEER_ADDRESS_HEADER } from './front/head';

/** A request's access line as its fields (the access log builds them; whoever writes the line formats them). */
export type AccessLineFields = Readonly<Record<string, unknown>>;

/** What an exchange uses of uWS's HttpResponse. */
export interface ResponseSink {
  onAborted(handler: () => void): unknown;
  onData(handler: (chunk: ArrayBuffer | Buffer, isLast: boolean) => void): unknown;
  cork(write: () => void): unknown;
  writeStatus(status: string): unknown;
  writeHeader(name: string, value: string): unknown;
  end(body: string | Buffer, closeConnection: boolean): unknown;
  close(): unknown;
  /**
   * Its chunks stay valid after the data handler returns (uWS's do not), until the exchange ends and
   * no analysis reads them (http/lent-bytes.ts), so a whole body may be kept without a copy.
   */
  readonly keepsChunks?: boolean;
  /** Body bytes the client sent that no data handler saw (a direct request whose client left mid-body). */
  readonly bytesIn?: number;
  /**
   * Takes the request's access line (its fields) to be written where the answer is framed (a front
   * thread), when the answer has not gone yet; false: the caller writes it.
   */
  carryLine?(fields: AccessLineFields): boolean;
}

/** What an exchange reads of uWS's HttpRequest (method in lower case, path, query without `?`, fields). */
export interface RequestSource {
  getMethod(): string;
  getUrl(): string;
  getQuery(): string | undefined;
  forEach(each: (name: string, value: string) => void): void;
}

/** How a request's client leaving is heard (by the batcher): an AbortSignal, or an Exchange itself (no AbortController per request). */
export interface Leaving {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options: { once: true }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export const MAX_DISCARD_BYTES = 64 * 1024 * 1024;

type Sink = (chunk: ArrayBuffer | Buffer, isLast: boolean) => void;

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
    req: RequestSource,
    /** Called once when the exchange ends: response written or client gone. */
    private readonly settledHook: (ex: Exchange) => void = () => undefined,
    /** When the head arrived, if before now (a front thread's direct request). */
    startedAt = performance.now(),
  ) {
    this.startedAt = startedAt;
    this.method = req.getMethod().toUpperCase();
    this.path = req.getUrl();
    this.query = req.getQuery() ?? '';
    let peer = '';
    req.forEach((key, value) => {
      if (key === PEER_ADDRESS_HEADER) peer = value;
      else this.headers.set(key, value);
    });
    this.peerAddress = peer;
    const length = this.headers.get('content-length');
    this.declaredLength = length !== undefined && /^\d{1,15}$/.test(length) ? Number(length) : null;
    this.bodyDone = this.declaredLength === 0 || (length === undefined && !this.headers.has('transfer-encoding'));
    res.onAborted(() => {
      this.aborted = true;
      if (!this.finished || this.pendingWrite) this.onSettled();
      this.pendingWrite = null;
      for (const listener of this.abortListeners.splice(0)) listener();
    });
    // Attached now, while uWS allows it: a body nobody reads is received and discarded, so an
    // answer sent later still finds the request complete.
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
        this.flush(false);
      } else if (this.received > MAX_DISCARD_BYTES) {
        this.flush(true);
      }
    });
  }

  private flush(close: boolean): void {
    const write = this.pendingWrite;
    this.pendingWrite = null;
    if (write && !this.aborted) {
      if (close) this.bodyDone = true; // the connection goes; nothing more will be read
      write();
      if (close) this.res.close();
    }
  }

  /**
   * Reads the whole body. Must be called synchronously inside the uWS handler (before any chunk).
   * Rejects with BodyTooLargeError past `limit` (declared or streamed), BadContentLengthError,
   * and ClientGoneError on abort. `borrow`: a whole body the transport keeps (a front thread's direct
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
          if (isLast && this.res.keepsChunks) return settle(() => resolve(keptBody(chunk, borrow)));
          buffer = Buffer.allocUnsafe(this.declaredLength ?? 0);
        }
        if (used + size > buffer.length) {
          const grown = Buffer.allocUnsafe(Math.min(limit, Math.max(buffer.length * 2, used + size, 64 * 1024)));
          buffer.copy(grown, 0, 0, used);
          buffer = grown;
        }
        buffer.set(Buffer.isBuffer(chunk) ? chunk : new Uint8Array(chunk), used);
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
      this.res.cork(() => {
        this.res.writeStatus(`${status} ${STATUS_CODES[status] ?? ''}`);
        for (const name in headers) this.res.writeHeader(name, headers[name]!);
        this.res.writeHeader('Server-Timing', serverTimingHeader(this.stages!));
        this.res.end(body, close);
      });
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

/** A whole body the transport keeps: as it is when borrowed, else the exchange's own copy (an ArrayBuffer is already its own). */
function keptBody(chunk: ArrayBuffer | Buffer, borrow: boolean): Buffer {
  if (!Buffer.isBuffer(chunk)) return Buffer.from(chunk);
  return borrow ? chunk : Buffer.from(chunk);
}
