// One HTTP request/response pair over uWS. Copies what it needs from the stack-bound
// HttpRequest up front, reads the body with a hard limit, and makes every write corked
// and safe after the client has gone away.
import { STATUS_CODES } from 'node:http';
import type { HttpRequest, HttpResponse } from './uws';

export class BodyTooLargeError extends Error {
  constructor(readonly limit: number) {
    super(`Request body exceeds ${limit} bytes`);
  }
}

export class ClientGoneError extends Error {
  constructor() {
    super('Client closed the connection');
  }
}

export class Exchange {
  readonly method: string;
  readonly path: string;
  readonly query: string;
  readonly headers = new Map<string, string>();
  params: Record<string, string> = {};
  aborted = false;
  finished = false;
  private bodyExpected: boolean;
  private abortListeners: Array<() => void> = [];

  constructor(
    private readonly res: HttpResponse,
    req: HttpRequest,
    /** Called once when the exchange ends: response sent or client gone. */
    private readonly onSettled: () => void = () => undefined,
  ) {
    this.method = req.getMethod().toUpperCase();
    this.path = req.getUrl();
    this.query = req.getQuery() ?? '';
    req.forEach((key, value) => this.headers.set(key, value));
    const length = this.headers.get('content-length');
    this.bodyExpected = (length !== undefined && length !== '0') || this.headers.has('transfer-encoding');
    res.onAborted(() => {
      this.aborted = true;
      if (!this.finished) this.onSettled();
      for (const listener of this.abortListeners.splice(0)) listener();
    });
  }

  header(name: string): string | undefined {
    return this.headers.get(name);
  }

  /** An AbortSignal that fires when the client disconnects before the response is sent. */
  signal(): AbortSignal {
    const controller = new AbortController();
    this.onAbort(() => controller.abort());
    return controller.signal;
  }

  /** Called once when the client disconnects before the response is sent. */
  onAbort(listener: () => void): void {
    if (this.aborted) listener();
    else this.abortListeners.push(listener);
  }

  /**
   * Reads the whole body. Must be called synchronously inside the uWS handler.
   * Rejects with BodyTooLargeError past `limit` (declared or streamed) and ClientGoneError on abort.
   */
  readBody(limit: number): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      const declared = Number(this.headers.get('content-length') ?? NaN);
      if (Number.isFinite(declared) && declared > limit) {
        reject(new BodyTooLargeError(limit));
        return;
      }
      // Preallocate when the length is known so each chunk is copied exactly once.
      let buffer = Buffer.allocUnsafe(Number.isFinite(declared) ? declared : 0);
      let received = 0;
      let settled = false;
      this.onAbort(() => {
        if (!settled) {
          settled = true;
          reject(new ClientGoneError());
        }
      });
      this.res.onData((chunk, isLast) => {
        if (settled) return;
        const size = chunk.byteLength;
        if (received + size > limit) {
          settled = true;
          reject(new BodyTooLargeError(limit));
          return;
        }
        if (received + size > buffer.length) {
          const grown = Buffer.allocUnsafe(Math.min(limit, Math.max(buffer.length * 2, received + size, 64 * 1024)));
          buffer.copy(grown, 0, 0, received);
          buffer = grown;
        }
        buffer.set(new Uint8Array(chunk), received);
        received += size;
        if (isLast) {
          settled = true;
          this.bodyExpected = false;
          resolve(buffer.subarray(0, received));
        }
      });
    });
  }

  /**
   * Sends a complete response. The connection is closed when request body bytes may still
   * be in flight, so they can never be read as the next request.
   */
  send(status: number, headers: Record<string, string>, body: string | Buffer): void {
    if (this.aborted || this.finished) return;
    this.finished = true;
    this.onSettled();
    const close = this.bodyExpected;
    this.res.cork(() => {
      this.res.writeStatus(`${status} ${STATUS_CODES[status] ?? ''}`);
      for (const name in headers) this.res.writeHeader(name, headers[name]!);
      this.res.end(body, close);
    });
  }
}
