// One client connection of the HTTP front (see front.ts): reads request heads, refuses what uWS
// would mishandle, forwards valid requests one at a time over a connection to uWS leased from the
// pool for that request, and passes the answers back. Bodies are forwarded as the Buffers that
// arrive; no per-byte work in JS.
//
// Order: the next request is read only once the previous answer has been passed on completely, so
// the front's own answers are always in order. A refusal that leaves the connection's framing in
// doubt is sent with `Connection: close`, and the connection closes after it. A client that
// half-closes after sending still gets the answers to every complete request it sent.
import net from 'node:net';
import { bodyTooLargeMessage, errorAnswer, methodNotAllowedAnswer, type Answer, type ErrorKind, type ErrorRenderer } from '../errors';
import { MAX_DISCARD_BYTES } from '../exchange';
import { ChunkedError, ChunkedReader } from './chunked';
import {
  MAX_HEAD_BYTES,
  STANDARD_METHODS,
  dechunkedHead,
  forwardedHead,
  parseHead,
  pathHint,
  peerTrailer,
  type HeadRefusal,
  type RequestHead,
} from './head';
import { answerBytes } from './answer-bytes';
import { plainAddress, type TrustedProxies } from './client-address';
import { ResponseError, ResponseReader } from './response';
import type { Upstream, UpstreamPool, UpstreamUser } from './upstream-pool';
import { log } from '../../log';

const CRLFCRLF = Buffer.from('\r\n\r\n', 'latin1');
/** Requests the front may send to uWS a second time when a connection closes before reading them. */
const REPLAYABLE: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);
/** Retry-After of the front's 429 when no connection to uWS is free in time. */
const OVERLOADED_RETRY_AFTER_S = '1';
const CONTINUE = Buffer.from('HTTP/1.1 100 Continue\r\n\r\n', 'latin1');
/** Bytes of pipelined requests held while an answer is awaited, before reading from the client pauses. */
const HOLD_LIMIT = 64 * 1024;
/** After a closing refusal: how long the client may go on sending (read and dropped) before the socket is destroyed. */
const LINGER_MS = 5_000;

export interface FrontSettings {
  /** uWS's private unix socket. */
  upstreamPath: string;
  /** Connections to uWS at most, and requests waiting for one at most (the rest get 429). */
  upstreamConnections: number;
  upstreamQueue: number;
  /** Longest a request waits for a connection to uWS before it gets 429. */
  upstreamWaitMs: number;
  trustedProxies: TrustedProxies;
  maxBodyBytes: number;
  /** Idle limit of a client connection between requests and while a head or chunked body arrives. */
  idleTimeoutMs: number;
  /** The methods the service routes for a path; empty when no route matches it. */
  allowedMethods(path: string): string[];
  /** How the interface a path belongs to writes errors. */
  rendererFor(path: string): ErrorRenderer;
  /** Hears every answer the front gives itself (refusals, 429 and 503), for the access log and metrics. */
  onAnswer?(record: FrontAnswer): void;
}

/** One answer of the front's own. */
export interface FrontAnswer {
  /** Empty when the request line could not be read. */
  method: string;
  path: string;
  requestId: string | undefined;
  client: string;
  status: number;
  /** When the head arrived whole (performance.now()), or when the refusal was decided. */
  startedAt: number;
  bytesIn: number;
  bytesOut: number;
}

export interface ConnectionEvents {
  /** The connection has no request in progress any more (answered, refused or closed). */
  idle(connection: FrontConnection): void;
  closed(connection: FrontConnection): void;
  /** False once the front stops accepting connections (shutdown). */
  accepting(): boolean;
}

const enum In {
  /** Waiting for a request head. */
  Head,
  /** Forwarding the current request's Content-Length body. */
  Body,
  /** Reading a chunked body whole before forwarding it. */
  Chunked,
  /** Dropping the body of a request the front answered itself. */
  Discard,
  /** The head is read; a connection to uWS is awaited. */
  Queued,
  /** The request is forwarded; its answer is awaited. */
  Wait,
  /** The connection is ending; nothing more is read. */
  Closing,
}

export class FrontConnection implements UpstreamUser {
  private state = In.Head;
  private upstream: Upstream | null = null;
  private upstreamBlocked = false;
  /** Leaves the pool's queue (the client went away while waiting). */
  private cancelWait: (() => void) | null = null;
  /** The current request, while it may be sent again (see onClose). */
  private replay: { headBytes: Buffer; head: RequestHead } | null = null;
  private corked: net.Socket | null = null;
  private clientPaused = false;
  /** Client bytes not read yet (pipelined requests while an answer is awaited). */
  private readonly held: Buffer[] = [];
  private heldOffset = 0;
  private heldBytes = 0;
  /** A head that has not arrived whole yet. */
  private headBuf: Buffer | null = null;
  private headLen = 0;
  /** Body bytes still to forward (Body) or drop (Discard). */
  private left = 0;
  private request: RequestHead | null = null;
  private chunks: ChunkedReader | null = null;
  private chunkParts: Buffer[] = [];
  private chunkBytes = 0;
  /** A request has been forwarded and its final answer has not been passed on completely. */
  private awaiting = false;
  private readonly response = new ResponseReader();
  private readonly peer: string;
  /** The peer-address field for every request; null from a trusted proxy (built per request). */
  private readonly trailer: Buffer | null;
  /** The current request's client address and when its head arrived. */
  private clientAddress: string;
  private startedAt = 0;
  private lingerTimer: NodeJS.Timeout | null = null;
  /** The client half-closed: nothing more will arrive. */
  private clientEnded = false;

  constructor(
    private readonly client: net.Socket,
    private readonly settings: FrontSettings,
    private readonly pool: UpstreamPool,
    private readonly events: ConnectionEvents,
  ) {
    this.peer = plainAddress(client.remoteAddress);
    this.clientAddress = this.peer;
    this.trailer = settings.trustedProxies.has(this.peer) ? null : peerTrailer(this.peer);
    client.setNoDelay(true);
    client.setTimeout(settings.idleTimeoutMs);
    client.on('data', (chunk: Buffer) => this.onClientData(chunk));
    client.on('drain', () => this.upstream?.socket.resume());
    client.on('timeout', () => this.onTimeout());
    client.on('end', () => {
      this.clientEnded = true;
      this.pump();
    });
    client.on('error', () => undefined); // 'close' follows
    client.on('close', () => this.onClientClose());
  }

  /** A request has been accepted and its answer has not been passed on completely. */
  get busy(): boolean {
    return this.awaiting || this.state === In.Chunked;
  }

  /** Ends the connection (shutdown: call when not busy). Resolves once everything written has been flushed. */
  end(): Promise<void> {
    if (this.client.destroyed || this.client.writableFinished) return Promise.resolve();
    const flushed = new Promise<void>((resolve) => {
      this.client.once('finish', resolve);
      this.client.once('close', resolve);
    });
    if (this.state !== In.Closing) {
      this.state = In.Closing;
      this.dropUpstream();
      this.client.end();
      this.flow();
    }
    return flushed;
  }

  private onClientData(chunk: Buffer): void {
    if (this.state === In.Closing) return;
    this.held.push(chunk);
    this.heldBytes += chunk.length;
    this.pump();
  }

  /** Works through the held client bytes as far as the state allows. */
  private pump(): void {
    while (this.held.length > 0 && this.state !== In.Wait && this.state !== In.Queued && this.state !== In.Closing) {
      const chunk = this.held[0]!;
      const at = this.step(chunk, this.heldOffset);
      this.heldBytes -= at - this.heldOffset;
      if (at >= chunk.length) {
        this.held.shift();
        this.heldOffset = 0;
      } else {
        this.heldOffset = at;
      }
    }
    if (this.corked) {
      // A head and the body bytes that came with it leave in one write.
      this.corked.uncork();
      this.corked = null;
    }
    if (this.clientEnded && this.held.length === 0 && !this.answerPending()) return this.finishEnded();
    this.flow();
  }

  /** A request is complete and its answer (or a wait for a connection to uWS) is under way. */
  private answerPending(): boolean {
    return this.state === In.Wait || this.state === In.Queued || this.state === In.Closing;
  }

  /** The client half-closed and every complete request is answered: an incomplete one is abandoned, the connection ends. */
  private finishEnded(): void {
    this.state = In.Closing;
    this.awaiting = false;
    this.dropUpstream();
    this.client.end();
    this.events.idle(this);
  }

  /** Reads from `chunk` at `at` in the current state; returns where it stopped. */
  private step(chunk: Buffer, at: number): number {
    switch (this.state) {
      case In.Head:
        return this.readHead(chunk, at);
      case In.Body:
      case In.Discard: {
        const n = Math.min(this.left, chunk.length - at);
        if (this.state === In.Body) this.toUpstream(n === chunk.length ? chunk : chunk.subarray(at, at + n));
        this.left -= n;
        if (this.left === 0) {
          this.state = this.state === In.Body && this.awaiting ? In.Wait : In.Head;
          this.releaseIfDone();
        }
        return at + n;
      }
      case In.Chunked:
        return this.readChunked(chunk, at);
      default:
        return at;
    }
  }

  private readHead(chunk: Buffer, at: number): number {
    if (this.headLen === 0) {
      // Empty lines before a request line are ignored (RFC 9112 §2.2).
      while (at + 1 < chunk.length && chunk[at] === 13 && chunk[at + 1] === 10) at += 2;
      if (at >= chunk.length) return at;
      const end = chunk.indexOf(CRLFCRLF, at);
      if (end !== -1 && end + 4 - at <= MAX_HEAD_BYTES) {
        this.onHead(chunk.subarray(at, end + 4));
        return end + 4;
      }
      if (end === -1 && chunk.length - at < MAX_HEAD_BYTES) {
        this.headBuf = Buffer.allocUnsafe(MAX_HEAD_BYTES);
        this.headLen = chunk.copy(this.headBuf, 0, at);
        this.checkPartialHead(0);
        return chunk.length;
      }
      this.refuseLongHead(chunk.subarray(at, at + MAX_HEAD_BYTES));
      return chunk.length;
    }
    const buf = this.headBuf!;
    const before = this.headLen;
    const n = chunk.copy(buf, before, at);
    this.headLen += n;
    const end = buf.subarray(0, this.headLen).indexOf(CRLFCRLF, Math.max(0, before - 3));
    if (end !== -1) {
      this.headBuf = null;
      this.headLen = 0;
      this.onHead(buf.subarray(0, end + 4));
      return at + (end + 4 - before);
    }
    if (this.headLen >= MAX_HEAD_BYTES) {
      this.refuseLongHead(buf);
      return chunk.length;
    }
    this.checkPartialHead(Math.max(0, before - 2));
    return at + n;
  }

  /** A head sent with bare LF line ends would never end with CRLF CRLF: refuse it at once. */
  private checkPartialHead(from: number): void {
    const part = this.headBuf!.subarray(0, this.headLen);
    if (part.indexOf('\n\n', from, 'latin1') !== -1 || part.indexOf('\n\r\n', from, 'latin1') !== -1) {
      const start = part.toString('latin1', 0, Math.min(part.length, 512));
      this.refuse({ kind: 'bad_request', message: 'Header lines must end with CRLF.', path: pathHint(start), requestId: undefined });
    }
  }

  private refuseLongHead(part: Buffer): void {
    const start = part.toString('latin1', 0, Math.min(part.length, 512));
    const lineDone = part.indexOf('\r\n', 0, 'latin1') !== -1;
    this.refuse({
      kind: lineDone ? 'header_too_large' : 'uri_too_long',
      message: lineDone ? `The request head exceeds ${MAX_HEAD_BYTES} bytes.` : `The request line exceeds ${MAX_HEAD_BYTES} bytes.`,
      path: pathHint(start),
      requestId: undefined,
    });
  }

  private onHead(raw: Buffer): void {
    let start = 0;
    while (start + 1 < raw.length && raw[start] === 13 && raw[start + 1] === 10) start += 2;
    if (raw.length - start < 4) return; // only empty lines (split across reads)
    if (start > 0) raw = raw.subarray(start);
    const parsed = parseHead(raw.toString('latin1'));
    if (!parsed.ok) return this.refuse(parsed.refusal);
    const head = parsed.head;
    this.request = head;
    this.startedAt = performance.now();
    this.clientAddress = this.trailer ? this.peer : this.settings.trustedProxies.clientOf(this.peer, head.forwarded, head.xForwardedFor);
    if (!STANDARD_METHODS.has(head.method)) return this.unknownMethod(head);
    if (head.expectContinue && head.contentLength > this.settings.maxBodyBytes) {
      return this.refuse(tooLarge(head, this.settings.maxBodyBytes), head);
    }
    if (head.chunked) {
      if (head.expectContinue) this.client.write(CONTINUE);
      this.chunks = new ChunkedReader();
      this.chunkParts = [];
      this.chunkBytes = 0;
      this.state = In.Chunked;
      return;
    }
    this.left = head.contentLength;
    this.forward(forwardedHead(raw, head, this.trailerFor()), null, head, this.left > 0 ? In.Body : In.Wait);
  }

  private trailerFor(): Buffer {
    return this.trailer ?? peerTrailer(this.clientAddress);
  }

  /** A method outside the nine standard ones: 405 with Allow where the path is routed, else 501. */
  private unknownMethod(head: RequestHead): void {
    const allow = this.settings.allowedMethods(head.path);
    const answer =
      allow.length > 0
        ? methodNotAllowedAnswer(this.settings.rendererFor(head.path), head.requestId, head.method, allow)
        : errorAnswer(this.settings.rendererFor(head.path), head.requestId, 'not_implemented', { message: 'Request method is not implemented.' });
    this.answerAndSkipBody(answer, head, head.chunked);
  }

  /**
   * Answers `head` itself. Its Content-Length body is dropped and the connection kept, unless the
   * client may be waiting for a 100 Continue before sending it (then nobody knows whether it will
   * come), the body's framing is unknown (`unframed`), or the connection is to close anyway.
   */
  private answerAndSkipBody(answer: Answer, head: RequestHead, unframed: boolean): void {
    if (head.close || unframed || (head.expectContinue && head.contentLength > 0)) return this.close(answer, head);
    this.send(answer, head, false);
    this.left = head.contentLength;
    this.state = this.left > 0 ? In.Discard : In.Head;
  }

  private readChunked(chunk: Buffer, at: number): number {
    let end: number;
    try {
      end = this.chunks!.read(chunk, at, this.collect);
    } catch (error) {
      if (!(error instanceof ChunkedError)) throw error;
      this.refuse({ kind: 'bad_request', message: 'Malformed chunked body.', path: this.request!.path, requestId: this.request!.requestId }, this.request!);
      return chunk.length;
    }
    if (this.chunkBytes > MAX_DISCARD_BYTES) {
      this.refuse(tooLarge(this.request!, this.settings.maxBodyBytes), this.request!);
      return chunk.length;
    }
    if (end === -1) return chunk.length;
    const head = this.request!;
    const parts = this.chunkParts;
    this.chunkParts = [];
    this.chunks = null;
    if (this.chunkBytes > this.settings.maxBodyBytes) {
      // Read to its end and dropped, so the client that uploads first and reads later gets the answer.
      const refusal = tooLarge(head, this.settings.maxBodyBytes);
      const answer = errorAnswer(this.settings.rendererFor(refusal.path), refusal.requestId, refusal.kind, { message: refusal.message });
      if (head.close) this.close(answer, head);
      else {
        this.send(answer, head, false);
        this.state = In.Head;
        this.events.idle(this);
      }
      return end;
    }
    const body = this.chunkBytes === 0 ? null : parts.length === 1 ? parts[0]! : Buffer.concat(parts, this.chunkBytes);
    this.forward(dechunkedHead(head, this.trailerFor(), this.chunkBytes), body, head, In.Wait);
    return end;
  }

  private readonly collect = (data: Buffer): void => {
    this.chunkBytes += data.length;
    if (this.chunkBytes <= this.settings.maxBodyBytes) this.chunkParts.push(data);
    else this.chunkParts = [];
  };

  /**
   * Sends a request head (and a body read whole) to uWS over a leased connection, then goes on in
   * state `next`. Without a free connection the request waits in the pool's queue (reading from the
   * client stops meanwhile); a full queue or a wait past the limit gets 429.
   */
  private forward(headBytes: Buffer, body: Buffer | null, head: RequestHead, next: In): void {
    this.awaiting = true;
    this.replay = body === null && head.contentLength === 0 && !head.chunked && REPLAYABLE.has(head.method) ? { headBytes, head } : null;
    this.response.begin(head.method === 'HEAD', head.http10 ? { keepAlive: !head.close } : null);
    this.state = In.Queued;
    let granted = false;
    let pumping = true;
    const grant = (upstream: Upstream): void => {
      granted = true;
      this.cancelWait = null;
      if (this.state !== In.Queued) return this.pool.release(upstream); // the client left meanwhile
      this.upstream = upstream;
      upstream.user = this;
      this.toUpstream(headBytes);
      if (body) this.toUpstream(body);
      this.state = next;
      if (!pumping) this.pump();
    };
    const refuse = (): void => {
      this.cancelWait = null;
      this.overloaded(head);
      if (!pumping) this.pump();
    };
    const cancel = this.pool.acquire(grant, refuse);
    if (cancel === null) this.overloaded(head);
    else if (!granted) this.cancelWait = cancel;
    pumping = false;
  }

  /** No connection to uWS in time: 429 in the path's format, the body (if any) dropped. */
  private overloaded(head: RequestHead): void {
    this.awaiting = false;
    this.state = In.Head;
    const answer = errorAnswer(this.settings.rendererFor(head.path), head.requestId, 'overloaded', {
      headers: { 'Retry-After': OVERLOADED_RETRY_AFTER_S },
    });
    this.answerAndSkipBody(answer, head, false);
    this.events.idle(this);
  }

  /** Body bytes go only to the connection that got their head; if it is gone, so is the request. */
  private toUpstream(bytes: Buffer): void {
    const socket = this.upstream?.socket;
    if (!socket) {
      this.state = In.Closing;
      this.client.destroy();
      return;
    }
    if (this.corked !== socket) {
      this.corked?.uncork();
      socket.cork();
      this.corked = socket;
    }
    if (!socket.write(bytes)) this.upstreamBlocked = true;
  }

  onDrain(): void {
    this.upstreamBlocked = false;
    this.flow();
  }

  private readonly toClient = (bytes: Buffer): void => {
    if (!this.client.write(bytes)) this.upstream?.socket.pause();
  };

  onData(chunk: Buffer): void {
    let ended: boolean;
    try {
      ended = this.response.read(chunk, this.toClient);
    } catch (error) {
      if (!(error instanceof ResponseError)) throw error;
      log.error('http front: unexpected bytes from the service', { reason: error.message });
      this.client.destroy();
      return;
    }
    if (ended) this.answered();
  }

  /** The final answer to the current request has been passed on. */
  private answered(): void {
    this.awaiting = false;
    this.events.idle(this);
    if (this.response.closeAfter || this.request?.close) {
      this.state = In.Closing;
      this.dropUpstream();
      this.client.end();
      return;
    }
    if (this.state === In.Wait) this.state = In.Head;
    this.releaseIfDone();
    if (this.state === In.Head) this.pump();
  }

  /** Once the answer is passed on and the request body forwarded, the connection to uWS goes back to the pool. */
  private releaseIfDone(): void {
    const upstream = this.upstream;
    if (!upstream || this.awaiting || this.state === In.Body) return;
    if (this.corked === upstream.socket) {
      upstream.socket.uncork();
      this.corked = null;
    }
    this.upstream = null;
    this.upstreamBlocked = false;
    upstream.socket.resume();
    if (this.response.serviceCloses) this.pool.discard(upstream);
    else this.pool.release(upstream);
  }

  onClose(connected: boolean): void {
    this.upstream = null;
    this.upstreamBlocked = false;
    if (this.state === In.Closing) return;
    if (!this.awaiting && this.state !== In.Body) {
      this.flow();
      return;
    }
    if (!this.awaiting) {
      // Answered early and closed while the body was still arriving: the rest has nowhere to go.
      this.state = In.Closing;
      this.client.end();
    } else if (this.response.endsWithClose) {
      this.awaiting = false;
      this.events.idle(this);
      this.state = In.Closing;
      this.client.end();
    } else if (connected && this.response.passed === 0 && this.replay && this.state === In.Wait) {
      // Closed by uWS before it read the request (an idle connection's close racing it): sent
      // again, once, over another connection; only bodiless GET, HEAD and OPTIONS requests.
      this.forward(this.replay.headBytes, null, this.replay.head, In.Wait);
      this.replay = null;
      this.pump(); // uncorks what forward() wrote
    } else if (!connected && this.response.passed === 0) {
      // uWS could not be reached: over capacity while running, gone while shutting down.
      const head = this.request!;
      const kind: ErrorKind = this.events.accepting() ? 'overloaded' : 'unavailable';
      this.close(errorAnswer(this.settings.rendererFor(head.path), head.requestId, kind, { headers: { 'Retry-After': '1' } }), head);
    } else {
      // The service dropped the request mid-way; the client sees the connection close, as it would from uWS.
      this.state = In.Closing;
      this.client.destroy();
    }
  }

  private onTimeout(): void {
    if (this.awaiting) return; // the service is answering; its own deadlines and uWS's timeouts apply
    if (this.state === In.Head && this.headLen > 0) {
      const start = this.headBuf!.toString('latin1', 0, Math.min(this.headLen, 512));
      this.refuse({ kind: 'request_timeout', message: 'The request head did not arrive in time.', path: pathHint(start), requestId: undefined });
      return;
    }
    this.client.destroy();
  }

  private onClientClose(): void {
    this.state = In.Closing;
    this.cancelWait?.();
    this.cancelWait = null;
    if (this.lingerTimer) clearTimeout(this.lingerTimer);
    this.held.length = 0;
    this.heldBytes = 0;
    this.chunkParts = [];
    this.awaiting = false;
    // An upstream request in progress is aborted, so the service's onAborted fires.
    this.dropUpstream();
    this.events.closed(this);
  }

  private refuse(refusal: HeadRefusal, head?: RequestHead): void {
    this.close(errorAnswer(this.settings.rendererFor(refusal.path), refusal.requestId, refusal.kind, { message: refusal.message }), head, refusal.path, refusal.method);
  }

  /** Sends a last answer with `Connection: close`, then reads and drops what the client still sends for a while. */
  private close(answer: Answer, head?: RequestHead, path = head?.path ?? '/', method = head?.method ?? ''): void {
    this.state = In.Closing;
    this.held.length = 0;
    this.heldBytes = 0;
    this.headBuf = null;
    this.headLen = 0;
    this.awaiting = false;
    this.cancelWait?.();
    this.cancelWait = null;
    this.dropUpstream();
    this.send(answer, head, true, path, method);
    this.events.idle(this);
    this.flow();
    this.lingerTimer = setTimeout(() => this.client.destroy(), LINGER_MS);
  }

  /** Writes an answer of the front's own and reports it (access log, metrics). */
  private send(answer: Answer, head: RequestHead | undefined, close: boolean, path = head?.path ?? '/', method = head?.method ?? ''): void {
    const bytes = answerBytes(answer, close, head?.http10 ?? false, head?.method === 'HEAD');
    if (close) this.client.end(bytes);
    else this.client.write(bytes);
    this.settings.onAnswer?.({
      method,
      path,
      requestId: answer.headers['X-Request-ID'] ?? head?.requestId,
      // Without a readable head, no forwarding field names anyone: the peer is the client.
      client: head ? this.clientAddress : this.peer,
      status: answer.status,
      startedAt: head ? this.startedAt : performance.now(),
      bytesIn: head?.contentLength ?? 0,
      bytesOut: Buffer.byteLength(answer.body),
    });
  }

  /** Closes the held connection to uWS, so a request in progress there is aborted. */
  private dropUpstream(): void {
    const upstream = this.upstream;
    this.upstream = null;
    this.upstreamBlocked = false;
    if (upstream) this.pool.discard(upstream);
  }

  /** Pauses reading from the client while uWS is not taking bytes or pipelined requests pile up. */
  private flow(): void {
    const hold = this.state !== In.Closing && (this.upstreamBlocked || this.heldBytes > HOLD_LIMIT);
    if (hold === this.clientPaused) return;
    this.clientPaused = hold;
    if (hold) this.client.pause();
    else this.client.resume();
  }
}

function tooLarge(head: RequestHead, limit: number): HeadRefusal {
  return { kind: 'payload_too_large', message: bodyTooLargeMessage(limit), path: head.path, requestId: head.requestId };
}
