// Framing of uWS's answers for the HTTP front: where the answer to the one outstanding request ends
// (interim 1xx heads, then a final head with Content-Length, a chunked body, or a body that runs to
// the close), which bytes the client gets (a HEAD request's body bytes, which uWS writes anyway, are
// dropped), and whether the service closes the connection after it. For an HTTP/1.0 client, interim
// answers are dropped, a chunked body is passed on decoded and ends with the connection, and the
// final head says whether the connection stays open (RFC 9112 §9.3).
import { ChunkedReader } from './chunked';

const CRLFCRLF = Buffer.from('\r\n\r\n', 'latin1');
const MAX_RESPONSE_HEAD = 64 * 1024;

export class ResponseError extends Error {}

const enum Part {
  Idle,
  Head,
  Body,
  Chunked,
  UntilClose,
}

const ignore = (): void => undefined;
/** Fields an HTTP/1.0 client's answer is given anew (or not at all): framing and connection. */
const HOP_FIELD = /^(?:connection|transfer-encoding|keep-alive)[ \t]*:/i;

export class ResponseReader {
  private part = Part.Idle;
  private stash: Buffer | null = null;
  private left = 0;
  private dropBody = false;
  private chunked: ChunkedReader | null = null;
  /** The client speaks HTTP/1.0: null, else whether it asked to keep the connection. */
  private http10: { keepAlive: boolean } | null = null;
  /** Chunk data goes to the client decoded (an HTTP/1.0 client). */
  private dechunk = false;
  /** The service closes its connection after the final response (`Connection: close`, or a body that runs to the close). */
  serviceCloses = false;
  /** The client's connection closes after the final response (the service's, or an HTTP/1.0 client's). */
  closeAfter = false;
  /** Bytes of the current answer passed to the client so far. */
  passed = 0;

  /**
   * Expects the answer to one request; `isHead`: the request was HEAD, so no body reaches the client;
   * `http10`: the client speaks HTTP/1.0 (null for HTTP/1.1).
   */
  begin(isHead: boolean, http10: { keepAlive: boolean } | null = null): void {
    this.part = Part.Head;
    this.dropBody = isHead;
    this.http10 = http10;
    this.dechunk = false;
    this.closeAfter = false;
    this.serviceCloses = false;
    this.passed = 0;
  }

  /** The answer has no length of its own and ends when the service closes the connection. */
  get endsWithClose(): boolean {
    return this.part === Part.UntilClose;
  }

  /**
   * Reads bytes from the service and passes what the client must get to `out`. Returns true when
   * the final response ended with this chunk. Throws ResponseError for bytes nobody asked for or an
   * unreadable head.
   */
  read(chunk: Buffer, out: (bytes: Buffer) => void): boolean {
    if (this.part === Part.Idle) throw new ResponseError('bytes from the service with no request outstanding');
    let at = 0;
    let from = 0;
    const flush = (to: number): void => {
      if (to > from) {
        out(from === 0 && to === chunk.length ? chunk : chunk.subarray(from, to));
        this.passed += to - from;
      }
      from = to;
    };
    const ended = (): boolean => {
      flush(at);
      if (at !== chunk.length) throw new ResponseError('bytes from the service after its answer');
      return true;
    };
    while (at < chunk.length) {
      switch (this.part) {
        case Part.Head: {
          if (this.stash === null) {
            const start = at;
            const end = chunk.indexOf(CRLFCRLF, start);
            if (end === -1) {
              flush(start);
              this.keep(chunk.subarray(start));
              return false;
            }
            at = end + 4;
            const rewritten = this.interpret(chunk.toString('latin1', start, at));
            if (rewritten !== null) {
              flush(start);
              from = at;
              this.emit(rewritten, out);
            }
          } else {
            const searchFrom = Math.max(0, this.stash.length - 3);
            const joined = Buffer.concat([this.stash, chunk]);
            const end = joined.indexOf(CRLFCRLF, searchFrom);
            if (end === -1) {
              this.keep(joined);
              return false;
            }
            const head = joined.subarray(0, end + 4);
            at = end + 4 - this.stash.length;
            from = at;
            this.stash = null;
            const rewritten = this.interpret(head.toString('latin1'));
            if (rewritten === null) {
              out(head);
              this.passed += head.length;
            } else {
              this.emit(rewritten, out);
            }
          }
          if ((this.part as Part) === Part.Idle) return ended();
          break;
        }
        case Part.Body: {
          const n = Math.min(this.left, chunk.length - at);
          if (this.dropBody) {
            flush(at);
            from = at + n;
          }
          at += n;
          this.left -= n;
          if (this.left === 0) {
            this.part = Part.Idle;
            return ended();
          }
          break;
        }
        case Part.Chunked: {
          const rewrite = this.dropBody || this.dechunk;
          if (rewrite) flush(at);
          const end = this.chunked!.read(chunk, at, this.dropBody || !this.dechunk ? ignore : this.passOn(out));
          at = end === -1 ? chunk.length : end;
          if (rewrite) from = at;
          if (end !== -1) {
            this.part = Part.Idle;
            return ended();
          }
          break;
        }
        case Part.UntilClose:
          at = chunk.length;
          break;
      }
    }
    flush(at);
    return false;
  }

  private passOn(out: (bytes: Buffer) => void): (data: Buffer) => void {
    return (data) => {
      out(data);
      this.passed += data.length;
    };
  }

  private emit(head: string, out: (bytes: Buffer) => void): void {
    if (head === '') return;
    const bytes = Buffer.from(head, 'latin1');
    out(bytes);
    this.passed += bytes.length;
  }

  private keep(partial: Buffer): void {
    if (partial.length > MAX_RESPONSE_HEAD) throw new ResponseError('response head too long');
    this.stash = partial;
  }

  /**
   * Reads one response head: interim (stays in Head) or final (decides the body's framing). Returns
   * the head the client gets instead (HTTP/1.0 clients: '' drops it), or null for the head as it is.
   */
  private interpret(head: string): string | null {
    const status = /^HTTP\/1\.1 (\d{3}) /.exec(head);
    if (!status) throw new ResponseError('unreadable response head');
    const code = Number(status[1]);
    if (code < 200) {
      if (code === 101) throw new ResponseError('protocol switch');
      return this.http10 ? '' : null;
    }
    const lower = head.toLowerCase();
    if (/\r\nconnection:[^\r]*\bclose\b/.test(lower)) this.serviceCloses = true;
    const length = /\r\ncontent-length:[ \t]*(\d+)[ \t]*\r\n/.exec(lower);
    if (length) {
      this.left = Number(length[1]);
      this.part = this.left === 0 ? Part.Idle : Part.Body;
    } else if (/\r\ntransfer-encoding:[^\r]*\bchunked\b/.test(lower)) {
      this.chunked = new ChunkedReader();
      this.part = Part.Chunked;
    } else if (code === 204 || code === 304) {
      this.part = Part.Idle;
    } else {
      this.part = Part.UntilClose;
      this.serviceCloses = true;
    }
    this.closeAfter = this.serviceCloses;
    return this.http10 ? this.http10Head(head) : null;
  }

  /** The final head for an HTTP/1.0 client: no chunked coding, and its own Connection field. */
  private http10Head(head: string): string {
    if (this.part === Part.Chunked && !this.dropBody) {
      this.dechunk = true;
      this.closeAfter = true; // the decoded body ends with the connection
    }
    if (!this.http10!.keepAlive) this.closeAfter = true;
    const lines = head.slice(0, -4).split('\r\n');
    const kept = lines.filter((line, i) => i === 0 || !HOP_FIELD.test(line));
    kept.push(this.closeAfter ? 'Connection: close' : 'Connection: keep-alive');
    return kept.join('\r\n') + '\r\n\r\n';
  }
}
