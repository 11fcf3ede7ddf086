// Framing of uWS's answers for the HTTP front: where the answer to the one outstanding request ends
// (interim 1xx heads, then a final head with Content-Length, a chunked body, or a body that runs to
// the close), which bytes the client gets (a HEAD request's body bytes, which uWS writes anyway, are
// dropped), and whether the service closes the connection after it.
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

export class ResponseReader {
  private part = Part.Idle;
  private stash: Buffer | null = null;
  private left = 0;
  private dropBody = false;
  private chunked: ChunkedReader | null = null;
  /** The final response carries `Connection: close`. */
  closeAfter = false;
  /** Bytes of the current answer passed to the client so far. */
  passed = 0;

  /** Expects the answer to one request; `isHead`: the request was HEAD, so no body reaches the client. */
  begin(isHead: boolean): void {
    this.part = Part.Head;
    this.dropBody = isHead;
    this.closeAfter = false;
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
            this.interpret(chunk.toString('latin1', start, at));
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
            out(head);
            this.passed += head.length;
            this.interpret(head.toString('latin1'));
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
          if (this.dropBody) flush(at);
          const end = this.chunked!.read(chunk, at, ignore);
          at = end === -1 ? chunk.length : end;
          if (this.dropBody) from = at;
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

  private keep(partial: Buffer): void {
    if (partial.length > MAX_RESPONSE_HEAD) throw new ResponseError('response head too long');
    this.stash = partial;
  }

  /** Reads one response head: interim (stays in Head) or final (decides the body's framing). */
  private interpret(head: string): void {
    const status = /^HTTP\/1\.1 (\d{3}) /.exec(head);
    if (!status) throw new ResponseError('unreadable response head');
    const code = Number(status[1]);
    if (code < 200) {
      if (code === 101) throw new ResponseError('protocol switch');
      return;
    }
    const lower = head.toLowerCase();
    if (/\r\nconnection:[^\r]*\bclose\b/.test(lower)) this.closeAfter = true;
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
    }
  }
}
