// The upstream side of one client connection of the HTTP front: sends each request the client side
// hands it to uWS over a connection leased from the pool for that request (waiting in the pool's
// queue when none is free), reads uWS's answer and passes its bytes to the client side, then gives
// the connection back, or closes it when the request is abandoned. A bodiless GET, HEAD or OPTIONS
// request is kept, to be sent once more if uWS closes the connection before reading it. It says how
// a held connection was lost; what the client then gets is the client side's decision
// (client-connection.ts).
import net from 'node:net';
import type { RequestHead } from './head';
import { ResponseError, ResponseReader } from './response';
import type { Upstream, UpstreamPool, UpstreamUser } from './upstream-pool';
import { log } from '../../log';

/** Requests the front may send to uWS a second time when a connection closes before reading them. */
const REPLAYABLE: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * How a held connection to uWS closed: `ended` (the answer runs to the close, and has ended),
 * `replayable` (closed before any answer, and the request may be sent again), `unreachable` (it
 * never connected), `dropped` (anything else: the request is lost mid-way).
 */
export type UpstreamLoss = 'ended' | 'replayable' | 'unreachable' | 'dropped';

/** The client side, as the exchange sees it. */
export interface ExchangeClient {
  /** Answer bytes for the client; false when the client's buffer is full (reading from uWS pauses). */
  write(bytes: Buffer): boolean;
  /** The final answer has been passed on; `close`: the client's connection ends after it. */
  answered(close: boolean): void;
  /** uWS takes request bytes again. */
  drained(): void;
  /** uWS sent bytes that are no answer to the request. */
  broken(): void;
  /** The connection to uWS closed while held. */
  lost(loss: UpstreamLoss): void;
}

export class UpstreamExchange implements UpstreamUser {
  private upstream: Upstream | null = null;
  /** The last write to uWS was buffered. */
  private stalled = false;
  /** A connection is awaited for the current request (the client side still wants it). */
  private waiting = false;
  /** Leaves the pool's queue. */
  private cancelWait: (() => void) | null = null;
  /** The current request, while it may be sent again (see resend). */
  private replay: { headBytes: Buffer; head: RequestHead } | null = null;
  private corked: net.Socket | null = null;
  private readonly response = new ResponseReader();

  constructor(
    private readonly pool: UpstreamPool,
    private readonly client: ExchangeClient,
  ) {}

  /** uWS is not taking request bytes: reading from the client pauses until it drains. */
  get blocked(): boolean {
    return this.stalled;
  }

  /**
   * Sends a request head (and a body read whole) to uWS over a leased connection, then calls
   * `sent`. Without a free connection the request waits in the pool's queue; `refused` is called
   * when none came within the wait limit. Returns false when the queue is full.
   */
  forward(headBytes: Buffer, body: Buffer | null, head: RequestHead, sent: () => void, refused: () => void): boolean {
    this.replay = body === null && head.contentLength === 0 && !head.chunked && REPLAYABLE.has(head.method) ? { headBytes, head } : null;
    this.response.begin(head.method === 'HEAD', head.http10 ? { keepAlive: !head.close } : null);
    this.waiting = true;
    let granted = false;
    const grant = (upstream: Upstream): void => {
      granted = true;
      this.cancelWait = null;
      if (!this.waiting) return this.pool.release(upstream); // the client left meanwhile
      this.waiting = false;
      this.upstream = upstream;
      upstream.user = this;
      this.write(headBytes);
      if (body) this.write(body);
      sent();
    };
    const expire = (): void => {
      this.cancelWait = null;
      this.waiting = false;
      refused();
    };
    const cancel = this.pool.acquire(grant, expire);
    if (cancel === null) {
      this.waiting = false;
      return false;
    }
    if (!granted) this.cancelWait = cancel;
    return true;
  }

  /** Sends the current request again (after a `replayable` loss), once; as forward. */
  resend(sent: () => void, refused: () => void): boolean {
    const replay = this.replay!;
    const queued = this.forward(replay.headBytes, null, replay.head, sent, refused);
    this.replay = null;
    return queued;
  }

  /** Writes request bytes; false when no connection is held (it closed, and the request with it). */
  write(bytes: Buffer): boolean {
    const socket = this.upstream?.socket;
    if (!socket) return false;
    if (this.corked !== socket) {
      this.corked?.uncork();
      socket.cork();
      this.corked = socket;
    }
    if (!socket.write(bytes)) this.stalled = true;
    return true;
  }

  /** Sends what was written since the last call (a head and the body bytes that came with it) in one write. */
  uncork(): void {
    if (!this.corked) return;
    this.corked.uncork();
    this.corked = null;
  }

  /** The client drained: reading from uWS goes on. */
  resume(): void {
    this.upstream?.socket.resume();
  }

  /** The answer is passed on and the request body sent: the connection goes back to the pool (closed if uWS closes it). */
  release(): void {
    const upstream = this.upstream;
    if (!upstream) return;
    if (this.corked === upstream.socket) {
      upstream.socket.uncork();
      this.corked = null;
    }
    this.upstream = null;
    this.stalled = false;
    upstream.socket.resume();
    if (this.response.serviceCloses) this.pool.discard(upstream);
    else this.pool.release(upstream);
  }

  /** Closes the held connection, so a request in progress there is aborted; a connection granted later goes back. */
  drop(): void {
    const upstream = this.upstream;
    this.upstream = null;
    this.stalled = false;
    this.waiting = false;
    if (upstream) this.pool.discard(upstream);
  }

  /** Leaves the pool's queue and drops the held connection: the request is abandoned. */
  abandon(): void {
    this.cancelWait?.();
    this.cancelWait = null;
    this.drop();
  }

  onData(chunk: Buffer): void {
    let ended: boolean;
    try {
      ended = this.response.read(chunk, this.pass);
    } catch (error) {
      if (!(error instanceof ResponseError)) throw error;
      log.error('http front: unexpected bytes from the service', { reason: error.message });
      this.client.broken();
      return;
    }
    if (ended) this.client.answered(this.response.closeAfter);
  }

  onDrain(): void {
    this.stalled = false;
    this.client.drained();
  }

  onClose(connected: boolean): void {
    this.upstream = null;
    this.stalled = false;
    this.client.lost(this.loss(connected));
  }

  private loss(connected: boolean): UpstreamLoss {
    if (this.response.endsWithClose) return 'ended';
    if (connected && this.response.passed === 0 && this.replay) return 'replayable';
    if (!connected && this.response.passed === 0) return 'unreachable';
    return 'dropped';
  }

  private readonly pass = (bytes: Buffer): void => {
    if (!this.client.write(bytes)) this.upstream?.socket.pause();
  };
}
