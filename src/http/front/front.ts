// The HTTP front: a strict HTTP/1.1 server on node:net that owns the public port and passes valid
// requests to uWS, which listens only on a private unix socket. It exists because uWS 20.30 drops
// many bad requests without an answer, or misreads them: heads over 4 KiB split across reads, more
// than 48 header fields, unknown methods, HTTP/1.0, a missing Host, duplicate Content-Length
// (request smuggling), Content-Length with Transfer-Encoding, chunked bodies with extensions or
// trailers split across reads; and it sends 100 Continue to bodies it will refuse, and body bytes
// after HEAD answers, and it answers HTTP/1.0 with 505. What the front checks and answers is listed
// in docs/operations.md "HTTP front".
//
// The port is opened without SO_REUSEPORT, so a second instance on the same port fails to start
// (ListenError) instead of silently sharing it.
import net, { type AddressInfo } from 'node:net';
import type { FrontSettings } from './settings';
import { ClientConnection } from './client-connection';
import { UpstreamPool, type PoolCounts } from './upstream-pool';
import { ListenError } from '../listen-error';
import { log } from '../../log';

/** Connections the kernel may hold for accepting (capped by net.core.somaxconn), for bursts of clients. */
const LISTEN_BACKLOG = 4096;

/**
 * Opens host:port (0 = any free port) on `server` without SO_REUSEPORT and with the front's backlog;
 * resolves with the port (in the same turn of the loop, before any connection is accepted), rejects
 * with ListenError.
 */
export function listenExclusive(server: net.Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) => reject(ListenError.from(host, port, error));
    server.once('error', failed);
    server.listen({ host, port, exclusive: true, backlog: LISTEN_BACKLOG }, () => {
      server.off('error', failed);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

export class HttpFront {
  private readonly server: net.Server;
  private readonly connections = new Set<ClientConnection>();
  private readonly pool: UpstreamPool;
  private idleWaiters: Array<() => void> = [];

  constructor(settings: FrontSettings) {
    this.pool = new UpstreamPool(settings.upstreamPath, {
      connections: settings.upstreamConnections,
      queue: settings.upstreamQueue,
      waitMs: settings.upstreamWaitMs,
    });
    settings.direct?.holdPlacesIn(this.pool);
    const events = {
      accepting: () => this.server.listening,
      idle: () => this.checkIdle(),
      closed: (connection: ClientConnection) => {
        this.connections.delete(connection);
        this.checkIdle();
      },
    };
    this.server = net.createServer({ noDelay: true, allowHalfOpen: true }, (socket) => {
      this.connections.add(new ClientConnection(socket, settings, this.pool, events));
    });
  }

  /** Opens host:port (0 = any free port) and resolves with the port; rejects with ListenError. */
  async listen(host: string, port: number): Promise<number> {
    const bound = await listenExclusive(this.server, host, port);
    this.server.on('error', (error) => log.error('http front: server error', { error: String(error) }));
    return bound;
  }

  /** Accepts on a socket already listening (one of the front threads' descriptors, front-threads.ts). */
  listenOn(fd: number): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen({ fd, backlog: LISTEN_BACKLOG }, () => {
        this.server.off('error', reject);
        this.server.on('error', (error) => log.error('http front: server error', { error: String(error) }));
        resolve();
      });
    });
  }

  /** The pool of connections to uWS: open, idle, and requests waiting for one. */
  get upstream(): PoolCounts {
    return this.pool.counts;
  }

  /** Stops accepting connections; open connections go on. */
  close(): void {
    if (this.server.listening) this.server.close();
  }

  /**
   * Shutdown, after close(): waits until no connection has a request in progress (every answer
   * passed on), then ends every connection once its data is flushed. Bounded by `timeoutMs`.
   */
  async drain(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    const work = (async () => {
      while (this.busy()) await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
      await Promise.all([...this.connections].map((c) => c.end()));
    })();
    await Promise.race([work, timeout]);
    clearTimeout(timer);
    for (const resolve of this.idleWaiters.splice(0)) resolve();
    this.pool.closeIdle();
  }

  private busy(): boolean {
    for (const connection of this.connections) if (connection.busy) return true;
    return false;
  }

  private checkIdle(): void {
    if (this.idleWaiters.length > 0 && !this.busy()) for (const resolve of this.idleWaiters.splice(0)) resolve();
  }
}
