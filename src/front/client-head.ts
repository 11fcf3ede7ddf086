// A request head as it arrives from a client of the HTTP front: collected across reads up to
// MAX_HEAD_BYTES and handed on whole, empty lines before it skipped, or refused when it runs too long
// or its lines end with a bare LF. Parsing the head is head.ts's work.
import { MAX_HEAD_BYTES, pathHint, type HeadRefusal } from './head';

const CRLFCRLF = Buffer.from('\r\n\r\n', 'latin1');

export interface HeadEvents {
  /** A whole head, from its request line to its empty line. */
  head(raw: Buffer): void;
  refuse(refusal: HeadRefusal): void;
}

export class HeadReader {
  /** A head that has not arrived whole yet. */
  private buf: Buffer | null = null;
  private len = 0;

  constructor(private readonly events: HeadEvents) {}

  /** Reads from `chunk` at `at`; returns where it stopped. */
  read(chunk: Buffer, at: number): number {
    if (this.len === 0) {
      // Empty lines before a request line are ignored (RFC 9112 §2.2).
      while (at + 1 < chunk.length && chunk[at] === 13 && chunk[at + 1] === 10) at += 2;
      if (at >= chunk.length) return at;
      const end = chunk.indexOf(CRLFCRLF, at);
      if (end !== -1 && end + 4 - at <= MAX_HEAD_BYTES) {
        this.found(chunk.subarray(at, end + 4));
        return end + 4;
      }
      if (end === -1 && chunk.length - at < MAX_HEAD_BYTES) {
        this.buf = Buffer.allocUnsafe(MAX_HEAD_BYTES);
        this.len = chunk.copy(this.buf, 0, at);
        this.checkPartial(0);
        return chunk.length;
      }
      this.refuseLong(chunk.subarray(at, at + MAX_HEAD_BYTES));
      return chunk.length;
    }
    const buf = this.buf!;
    const before = this.len;
    const n = chunk.copy(buf, before, at);
    this.len += n;
    const end = buf.subarray(0, this.len).indexOf(CRLFCRLF, Math.max(0, before - 3));
    if (end !== -1) {
      this.reset();
      this.found(buf.subarray(0, end + 4));
      return at + (end + 4 - before);
    }
    if (this.len >= MAX_HEAD_BYTES) {
      this.refuseLong(buf);
      return chunk.length;
    }
    this.checkPartial(Math.max(0, before - 2));
    return at + n;
  }

  /** The refusal of a head that has begun but not arrived whole in time; null when none has begun. */
  lateRefusal(): HeadRefusal | null {
    if (this.len === 0) return null;
    const start = this.buf!.toString('latin1', 0, Math.min(this.len, 512));
    return { kind: 'request_timeout', message: 'The request head did not arrive in time.', path: pathHint(start), requestId: undefined };
  }

  /** Forgets a head that has not arrived whole. */
  reset(): void {
    this.buf = null;
    this.len = 0;
  }

  private found(raw: Buffer): void {
    let start = 0;
    while (start + 1 < raw.length && raw[start] === 13 && raw[start + 1] === 10) start += 2;
    if (raw.length - start < 4) return; // only empty lines (split across reads)
    this.events.head(start > 0 ? raw.subarray(start) : raw);
  }

  /** A head sent with bare LF line ends would never end with CRLF CRLF: refuse it at once. */
  private checkPartial(from: number): void {
    const part = this.buf!.subarray(0, this.len);
    if (part.indexOf('\n\n', from, 'latin1') !== -1 || part.indexOf('\n\r\n', from, 'latin1') !== -1) {
      const start = part.toString('latin1', 0, Math.min(part.length, 512));
      this.events.refuse({ kind: 'bad_request', message: 'Header lines must end with CRLF.', path: pathHint(start), requestId: undefined });
    }
  }

  private refuseLong(part: Buffer): void {
    const start = part.toString('latin1', 0, Math.min(part.length, 512));
    const lineDone = part.indexOf('\r\n', 0, 'latin1') !== -1;
    this.events.refuse({
      kind: lineDone ? 'header_too_large' : 'uri_too_long',
      message: lineDone ? `The request head exceeds ${MAX_HEAD_BYTES} bytes.` : `The request line exceeds ${MAX_HEAD_BYTES} bytes.`,
      path: pathHint(start),
      requestId: undefined,
    });
  }
}
