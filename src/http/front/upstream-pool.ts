// The HTTP front's connections to uWS's private socket: a bounded pool shared by all client
// connections, with a bounded FIFO of requests waiting for one. A request holds a connection from
// its head to the end of its answer; between requests, connections wait idle for the next one.
// Bounding them keeps a burst of client connections from overflowing uWS's listen backlog (whose
// failed connects were answered 503 before); what the pool and its queue cannot take is refused
// by the caller with 429. A request served without a connection (the direct way: direct-exchange.ts)
// holds one of the pool's places all the same, so the limit and the queue are the same either way.
import net from 'node:net';

/** Idle connections older than this are closed, well before uWS's own 10 s idle close can race a request. */
const IDLE_CLOSE_MS = 5_000;

/** Whoever holds a connection hears its events. */
export interface UpstreamUser {
  onData(chunk: Buffer): void;
  onDrain(): void;
  /** The connection closed while held; `connected`: whether it had ever connected. */
  onClose(connected: boolean): void;
}

export class Upstream {
  connected = false;
  user: UpstreamUser | null = null;
  constructor(readonly socket: net.Socket) {}
}

export interface PoolLimits {
  /** Connections to uWS at most (idle, connecting and in use). */
  connections: number;
  /** Requests waiting for a connection at most; more are refused. */
  queue: number;
  /** Longest a request waits for a connection before it is refused. */
  waitMs: number;
}

interface Waiter {
  grant(upstream: Upstream): void;
  expire(): void;
  timer: NodeJS.Timeout;
}

export interface PoolCounts {
  open: number;
  idle: number;
  waiting: number;
}

export class UpstreamPool {
  private readonly idle: Upstream[] = [];
  private readonly waiting = new Set<Waiter>();
  private open = 0;
  /** Places held by requests served without a connection. */
  private placesHeld = 0;

  constructor(
    private readonly path: string,
    private readonly limits: PoolLimits,
  ) {}

  get counts(): PoolCounts {
    return { open: this.open, idle: this.idle.length, waiting: this.waiting.size };
  }

  /**
   * Hands a connection to `grant` now, or when one is free; `expire` is called instead when none
   * came within the wait limit. Returns a cancel function, or null when the queue is full.
   */
  acquire(grant: (upstream: Upstream) => void, expire: () => void): (() => void) | null {
    const ready = this.busy() < this.limits.connections ? (this.takeIdle() ?? this.connect()) : null;
    if (ready) {
      ready.socket.setTimeout(0);
      grant(ready);
      return () => undefined;
    }
    if (this.waiting.size >= this.limits.queue) return null;
    const waiter: Waiter = {
      grant,
      expire,
      timer: setTimeout(() => {
        this.waiting.delete(waiter);
        expire();
      }, this.limits.waitMs),
    };
    this.waiting.add(waiter);
    return () => {
      clearTimeout(waiter.timer);
      this.waiting.delete(waiter);
    };
  }

  /** Whether a request can have a place at once: one is free and none waits for it. */
  hasPlace(): boolean {
    return this.waiting.size === 0 && this.busy() < this.limits.connections;
  }

  /** A request served without a connection takes a place (after hasPlace). */
  takePlace(): void {
    this.placesHeld++;
  }

  /** ...and gives it back: the longest waiter gets a connection in it. */
  givePlace(): void {
    this.placesHeld--;
    if (this.waiting.size > 0 && this.busy() < this.limits.connections) {
      const upstream = this.takeIdle() ?? this.connect();
      upstream.socket.setTimeout(0);
      this.nextWaiter()!.grant(upstream);
    }
  }

  /** Places in use: connections held by requests, and places held without one. */
  private busy(): number {
    return this.open - this.idle.length + this.placesHeld;
  }

  /** The answer has been read whole: the connection goes to the next waiter, or waits idle. */
  release(upstream: Upstream): void {
    upstream.user = null;
    if (upstream.socket.destroyed) return;
    const next = this.nextWaiter();
    if (next) return next.grant(upstream);
    upstream.socket.setTimeout(IDLE_CLOSE_MS);
    this.idle.push(upstream);
  }

  /** Closes a held connection whose request was abandoned; its place goes to a new one. */
  discard(upstream: Upstream): void {
    upstream.user = null;
    upstream.socket.destroy();
  }

  /** The most recently used idle connection that is still open. */
  private takeIdle(): Upstream | null {
    for (let upstream = this.idle.pop(); upstream; upstream = this.idle.pop()) if (upstream.socket.writable) return upstream;
    return null;
  }

  /** Shutdown: closes the idle connections. */
  closeIdle(): void {
    for (const upstream of this.idle.splice(0)) upstream.socket.destroy();
  }

  /** An idle connection that timed out or was ended by uWS leaves the idle list at once ('close' comes a turn later). */
  private closeIdleOne(upstream: Upstream): void {
    const at = this.idle.indexOf(upstream);
    if (at !== -1) this.idle.splice(at, 1);
    upstream.socket.destroy();
  }

  private nextWaiter(): Waiter | null {
    for (const waiter of this.waiting) {
      this.waiting.delete(waiter);
      clearTimeout(waiter.timer);
      return waiter;
    }
    return null;
  }

  private connect(): Upstream {
    const socket = net.createConnection(this.path);
    const upstream = new Upstream(socket);
    this.open++;
    socket.setNoDelay(true);
    socket.on('connect', () => (upstream.connected = true));
    socket.on('data', (chunk: Buffer) => {
      if (upstream.user) upstream.user.onData(chunk);
      else socket.destroy(); // bytes nobody asked for
    });
    socket.on('drain', () => upstream.user?.onDrain());
    socket.on('timeout', () => this.closeIdleOne(upstream));
    socket.on('end', () => {
      if (!upstream.user) this.closeIdleOne(upstream); // uWS closed an idle connection
    });
    socket.on('error', () => undefined); // 'close' follows
    socket.on('close', () => {
      this.open--;
      const at = this.idle.indexOf(upstream);
      if (at !== -1) this.idle.splice(at, 1);
      const user = upstream.user;
      upstream.user = null;
      user?.onClose(upstream.connected);
      // Its place is free: the longest waiter gets a new connection.
      if (this.waiting.size > 0 && this.busy() < this.limits.connections) this.nextWaiter()!.grant(this.connect());
    });
    return upstream;
  }
}
