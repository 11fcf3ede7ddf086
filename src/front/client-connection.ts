// One client connection of the HTTP front (see front.ts): reads requests from the client's socket
// (heads collected by client-head.ts), refuses what is not strict HTTP/1.1 or HTTP/1.0 (head.ts),
// hands each valid request to the service over its front's link (service-link.ts), one at a time, and
// writes every answer, the service's and its own (answer-writer.ts). Bodies go into the link as the
// Buffers arrive; no per-byte work in JS.
//
// Order: the next request is read only once the previous answer has been written, so answers are
// always in order. A refusal that leaves the connection's framing in doubt is sent with
// `Connection: close`, and the connection closes after it. A client that half-closes after sending
// still gets the answers to every complete request it sent.
import net from 'node:net';
import { bodyTooLargeMessage } from '../errors';
import { errorAnswer, methodNotAllowedAnswer, type Answer } from '../http/error-answers';
import { MAX_DISCARD_BYTES } from '../http/exchange';
import { serviceFields, writeAnswer, writeOwnAnswer } from './answer-writer';
import { ChunkedError, ChunkedReader } from './chunked';
import { STANDARD_METHODS, parseHead, serviceHead, type HeadRefusal, type RequestHead } from './head';
import { plainAddress } from './client-address';
import { HeadReader } from './client-head';
import type { FrontSettings } from './settings';
import { BodyWay, ServiceExchange, type ServiceAnswer } from './service-link';
import { isStreamUpgrade, relayUpgrade } from './upgrade-relay';

/** Retry-After of the front's 429 when no place in the service is free in time. */
const OVERLOADED_RETRY_AFTER_S = '1';
const CONTINUE = Buffer.from('HTTP/1.1 100 Continue\r\n\r\n', 'latin1');
/** Bytes of pipelined requests held while an answer is awaited, before reading from the client pauses. */
const HOLD_LIMIT = 64 * 1024;
/** After a closing refusal: how long the client may go on sending (read and dropped) before the socket is destroyed. */
const LINGER_MS = 5_000;
/**
 * How long a new connection may wait for its first byte (or the idle limit, if longer). In a burst
 * past the listen backlog the kernel drops the first packets of connections their clients already
 * see open, and TCP sends them again after pauses that double each time: the request can come more
 * than 10 s after the connection was accepted (docs/operations.md "Bursts").
 */
const FIRST_BYTE_WAIT_MS = 60_000;

export interface ConnectionEvents {
  /** The connection has no request in progress any more (answered, refused or closed). */
  idle(connection: ClientConnection): void;
  closed(connection: ClientConnection): void;
}

const enum In {
  /** Waiting for a request head. */
  Head,
  /** Passing the current request's Content-Length body to the service. */
  Body,
  /** Reading a chunked body whole before handing the request over. */
  Chunked,
  /** Dropping the body of a request the front answered itself. */
  Discard,
  /** The head is read; a place in the service is awaited. */
  Queued,
  /** The request is handed over; its answer is awaited. */
  Wait,
  /** The connection is ending; nothing more is read. */
  Closing,
  /** A WebSocket upgrade: the connection is handed to the stream server (upgrade-relay.ts). */
  Relayed,
}

export class ClientConnection {
  private state = In.Head;
  private readonly exchange: ServiceExchange;
  private readonly heads = new HeadReader({ head: (raw) => this.onHead(raw), refuse: (refusal) => this.refuse(refusal) });
  private clientPaused = false;
  /** Client bytes not read yet (pipelined requests while an answer is awaited). */
  private readonly held: Buffer[] = [];
  private heldOffset = 0;
  private heldBytes = 0;
  /** Body bytes still to pass on (Body) or drop (Discard). */
  private left = 0;
  private request: RequestHead | null = null;
  private chunks: ChunkedReader | null = null;
  private chunkParts: Buffer[] = [];
  private chunkBytes = 0;
  /** A request has been handed over and its answer has not been written. */
  private awaiting = false;
  private readonly peer: string;
  /** The peer is a trusted proxy: each request's client is read from its forwarding fields. */
  private readonly viaProxy: boolean;
  /** The current request's client address and when its head arrived. */
  private clientAddress: string;
  private startedAt = 0;
  private lingerTimer: NodeJS.Timeout | null = null;
  /** The client half-closed: nothing more will arrive. */
  private clientEnded = false;
  /** A byte has come from the client: the idle limit applies from then on. */
  private spoken = false;

  constructor(
    private readonly client: net.Socket,
    private readonly settings: FrontSettings,
    private readonly events: ConnectionEvents,
  ) {
    this.exchange = new ServiceExchange(settings.link, (answer) => this.answer(answer));
    this.peer = plainAddress(client.remoteAddress);
    this.clientAddress = this.peer;
    this.viaProxy = settings.trustedProxies.has(this.peer);
    client.setNoDelay(true);
    client.setTimeout(Math.max(settings.idleTimeoutMs, FIRST_BYTE_WAIT_MS));
    client.on('data', (chunk: Buffer) => this.onClientData(chunk));
    client.on('timeout', () => this.onTimeout());
    client.on('end', () => {
      this.clientEnded = true;
      this.pump();
    });
    client.on('error', () => undefined); // 'close' follows
    client.on('close', () => this.onClientClose());
  }

  /** A request has been accepted and its answer has not been written. */
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
      this.exchange.abandon();
      this.client.end();
      this.flow();
    }
    return flushed;
  }

  private onClientData(chunk: Buffer): void {
    if (!this.spoken) {
      this.spoken = true;
      this.client.setTimeout(this.settings.idleTimeoutMs);
    }
    if (this.state === In.Closing) return;
    this.held.push(chunk);
    this.heldBytes += chunk.length;
    this.pump();
  }

  /** Works through the held client bytes as far as the state allows. */
  private pump(): void {
    while (this.held.length > 0 && this.state !== In.Wait && this.state !== In.Queued && this.state !== In.Closing && this.state !== In.Relayed) {
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
    if (this.state === In.Relayed) return this.relay();
    this.exchange.uncork();
    if (this.clientEnded && this.held.length === 0 && !this.answerPending()) return this.finishEnded();
    this.flow();
  }

  /** A request is complete and its answer (or a wait for a place) is under way. */
  private answerPending(): boolean {
    return this.state === In.Wait || this.state === In.Queued || this.state === In.Closing;
  }

  /** The client half-closed and every complete request is answered: an incomplete one is abandoned, the connection ends. */
  private finishEnded(): void {
    this.state = In.Closing;
    this.awaiting = false;
    this.exchange.abandon();
    this.client.end();
    this.events.idle(this);
  }

  /** Reads from `chunk` at `at` in the current state; returns where it stopped. */
  private step(chunk: Buffer, at: number): number {
    switch (this.state) {
      case In.Head:
        return this.heads.read(chunk, at);
      case In.Body:
      case In.Discard: {
        const n = Math.min(this.left, chunk.length - at);
        if (this.state === In.Body) this.toService(n === chunk.length ? chunk : chunk.subarray(at, at + n));
        this.left -= n;
        if (this.left === 0 && (this.state as In) !== In.Closing) this.state = this.state === In.Body && this.awaiting ? In.Wait : In.Head;
        return at + n;
      }
      case In.Chunked:
        return this.readChunked(chunk, at);
      default:
        return at;
    }
  }

  private onHead(raw: Buffer): void {
    const parsed = parseHead(raw.toString('latin1'));
    if (!parsed.ok) return this.refuse(parsed.refusal);
    const head = parsed.head;
    this.request = head;
    this.startedAt = performance.now();
    this.clientAddress = this.viaProxy ? this.settings.trustedProxies.clientOf(this.peer, head.forwarded, head.xForwardedFor) : this.peer;
    if (!STANDARD_METHODS.has(head.method)) return this.unknownMethod(head);
    if (this.settings.streamSocket !== null && isStreamUpgrade(head)) return void (this.state = In.Relayed);
    // Over the limit, and asked about first (Expect) or too long to read and drop: 413 here, and close.
    if (head.contentLength > this.settings.maxBodyBytes && (head.expectContinue || head.contentLength > MAX_DISCARD_BYTES)) {
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
    const way = this.left === 0 ? BodyWay.None : this.left > this.settings.maxBodyBytes ? BodyWay.Dropped : BodyWay.Whole;
    this.handOver(head, serviceHead(head, this.clientAddress, 0), way, this.left > 0 ? In.Body : In.Wait);
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
    const bytes = this.chunkBytes;
    const way = bytes > 0 ? BodyWay.Whole : BodyWay.None;
    this.handOver(head, serviceHead(head, this.clientAddress, bytes), way, In.Wait, () => {
      for (const part of parts) this.exchange.write(part);
    });
    return end;
  }

  private readonly collect = (data: Buffer): void => {
    this.chunkBytes += data.length;
    if (this.chunkBytes <= this.settings.maxBodyBytes) this.chunkParts.push(data);
    else this.chunkParts = [];
  };

  /**
   * Hands the request to the service once it has a place, then goes on in state `next` (`withBody`:
   * a body read already is written first). Nothing more is read from the client while a place is
   * awaited; a full queue or a wait past the limit gets 429.
   */
  private handOver(head: RequestHead, packed: string, way: BodyWay, next: In, withBody?: () => void): void {
    this.awaiting = true;
    this.state = In.Queued;
    let pumping = true;
    const granted = (): void => {
      // A chunked body's 100 Continue went with its head (onHead).
      if (head.expectContinue && !head.chunked && way === BodyWay.Whole) this.client.write(CONTINUE);
      this.state = next;
      withBody?.();
      if (!pumping) this.pump();
    };
    const expired = (): void => {
      this.overloaded(head);
      if (!pumping) this.pump();
    };
    const bodyBytes = head.chunked ? this.chunkBytes : head.contentLength;
    if (!this.exchange.begin(packed, bodyBytes, way, granted, expired)) this.overloaded(head);
    pumping = false;
  }

  /** No place in the service in time: 429 in the path's format, the body (if any) dropped. */
  private overloaded(head: RequestHead): void {
    this.awaiting = false;
    this.state = In.Head;
    const answer = errorAnswer(this.settings.rendererFor(head.path), head.requestId, 'overloaded', {
      headers: { 'Retry-After': OVERLOADED_RETRY_AFTER_S },
    });
    this.answerAndSkipBody(answer, head, false);
    this.events.idle(this);
  }

  /** Body bytes go only to the request that got their head; if it has been answered (a closing answer), the connection goes. */
  private toService(bytes: Buffer): void {
    if (this.exchange.write(bytes)) return;
    this.state = In.Closing;
    this.client.destroy();
  }

  /** The service's answer: framed and written; the connection ends after it when the service or the client said so. */
  private answer(message: ServiceAnswer): void {
    const head = this.request!;
    const body = typeof message.body === 'string' ? Buffer.from(message.body, 'utf8') : Buffer.from(message.body.buffer, message.body.byteOffset, message.body.byteLength);
    const close = message.close || head.close;
    writeAnswer(this.client, message.status, serviceFields(message.fields), body, { close: message.close || (head.http10 && head.close), http10: head.http10, omitBody: head.method === 'HEAD' });
    this.awaiting = false;
    this.events.idle(this);
    if (close) {
      this.state = In.Closing;
      this.exchange.abandon();
      this.client.end();
      return;
    }
    if (this.state === In.Wait) this.state = In.Head;
    if (this.state === In.Head) this.pump();
  }

  /** The connection goes to the stream server with what the client sent after the upgrade's head; the front only holds the socket from now on. */
  private relay(): void {
    for (const event of ['data', 'timeout', 'end'] as const) this.client.removeAllListeners(event);
    this.client.setTimeout(0);
    const rest = this.held.map((bytes, i) => (i === 0 ? bytes.subarray(this.heldOffset) : bytes));
    this.held.length = 0;
    this.heldBytes = 0;
    relayUpgrade(this.client, this.request!, this.clientAddress, rest, this.settings.streamSocket!);
  }

  private onTimeout(): void {
    // A body stalled while the service holds its request is the front's to time out.
    if (this.awaiting && this.exchange.receiving) return void this.client.destroy();
    if (this.awaiting) return; // the service is answering; its own deadlines apply
    const late = this.state === In.Head ? this.heads.lateRefusal() : null;
    if (late) return this.refuse(late);
    this.client.destroy();
  }

  private onClientClose(): void {
    // A request the service has not seen yet (waiting for a place, or its chunked body still
    // arriving) is the front's to report; one the service has is reported by the service.
    if (this.state === In.Queued || this.state === In.Chunked) this.reportGone(this.request!);
    this.state = In.Closing;
    if (this.lingerTimer) clearTimeout(this.lingerTimer);
    this.held.length = 0;
    this.heldBytes = 0;
    this.chunkParts = [];
    this.awaiting = false;
    // A request the service holds is aborted, so the service's onAborted fires.
    this.exchange.abandon();
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
    this.heads.reset();
    this.awaiting = false;
    this.exchange.abandon();
    this.send(answer, head, true, path, method);
    this.events.idle(this);
    this.flow();
    this.lingerTimer = setTimeout(() => this.client.destroy(), LINGER_MS);
  }

  /** Writes an answer of the front's own and reports it (access log, metrics). */
  private send(answer: Answer, head: RequestHead | undefined, close: boolean, path = head?.path ?? '/', method = head?.method ?? ''): void {
    writeOwnAnswer(this.client, answer, { close, http10: head?.http10 ?? false, omitBody: head?.method === 'HEAD' });
    if (close) this.client.end();
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

  /** Reports a request whose client left before it was answered (access log, metrics). */
  private reportGone(head: RequestHead): void {
    this.settings.onAnswer?.({
      method: head.method,
      path: head.path,
      requestId: head.requestId,
      client: this.clientAddress,
      status: 'client_closed',
      startedAt: this.startedAt,
      bytesIn: head.chunked ? this.chunkBytes : head.contentLength,
      bytesOut: 0,
    });
  }

  /** Pauses reading from the client while pipelined requests pile up. */
  private flow(): void {
    const hold = this.state !== In.Closing && this.heldBytes > HOLD_LIMIT;
    if (hold === this.clientPaused) return;
    this.clientPaused = hold;
    if (hold) this.client.pause();
    else this.client.resume();
  }
}

function tooLarge(head: RequestHead, limit: number): HeadRefusal {
  return { kind: 'payload_too_large', message: bodyTooLargeMessage(limit), path: head.path, requestId: head.requestId };
}
