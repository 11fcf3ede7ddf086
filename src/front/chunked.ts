// An incremental reader of the chunked transfer coding (RFC 9112 §7.1): finds where a chunked body
// ends and hands out its data as slices of the input (no per-byte work on data). Chunk extensions
// are skipped, trailer fields checked for syntax and dropped.

/** Longest chunk-size line (with extensions) and longest trailer section accepted. */
const MAX_LINE = 4096;
const MAX_TRAILER = 16 * 1024;
const SIZE_LINE = /^([0-9A-Fa-f]{1,8})[ \t]*(?:;[^\x00-\x08\x0a-\x1f\x7f]*)?$/;
const FIELD_LINE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+:[^\x00-\x08\x0a-\x1f\x7f]*$/;

export class ChunkedError extends Error {}

const enum Step {
  Size,
  Data,
  DataCr,
  DataLf,
  Trailer,
  Done,
}

export class ChunkedReader {
  private step = Step.Size;
  private remaining = 0;
  private line = '';
  private trailerBytes = 0;

  /**
   * Reads `chunk` from `offset`; calls `onData` with each piece of body data. Returns the offset just
   * past the end of the body when it ends in this chunk, else -1. Throws ChunkedError on bad framing.
   */
  read(chunk: Buffer, offset: number, onData: (data: Buffer) => void): number {
    let at = offset;
    while (at < chunk.length) {
      switch (this.step) {
        case Step.Data: {
          const n = Math.min(this.remaining, chunk.length - at);
          onData(chunk.subarray(at, at + n));
          at += n;
          this.remaining -= n;
          if (this.remaining === 0) this.step = Step.DataCr;
          break;
        }
        case Step.DataCr:
          if (chunk[at++] !== 13) throw new ChunkedError('chunk data not followed by CRLF');
          this.step = Step.DataLf;
          break;
        case Step.DataLf:
          if (chunk[at++] !== 10) throw new ChunkedError('chunk data not followed by CRLF');
          this.step = Step.Size;
          break;
        case Step.Size:
        case Step.Trailer: {
          const lf = chunk.indexOf(10, at);
          const end = lf === -1 ? chunk.length : lf;
          this.line += chunk.toString('latin1', at, end);
          if (this.line.length > MAX_LINE + 1) throw new ChunkedError('chunk line too long');
          if (lf === -1) return -1;
          at = lf + 1;
          if (!this.line.endsWith('\r')) throw new ChunkedError('line not ended by CRLF');
          const line = this.line.slice(0, -1);
          this.line = '';
          if (this.step === Step.Size) this.sizeLine(line);
          else if (line === '') {
            this.step = Step.Done;
            return at;
          } else {
            this.trailerBytes += line.length + 2;
            if (this.trailerBytes > MAX_TRAILER || !FIELD_LINE.test(line)) throw new ChunkedError('bad trailer section');
          }
          break;
        }
        case Step.Done:
          return at;
      }
    }
    return -1;
  }

  private sizeLine(line: string): void {
    const match = SIZE_LINE.exec(line);
    if (!match) throw new ChunkedError('bad chunk size line');
    const size = parseInt(match[1]!, 16);
    if (size === 0) this.step = Step.Trailer;
    else {
      this.remaining = size;
      this.step = Step.Data;
    }
  }
}
