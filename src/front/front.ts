// The HTTP front: a strict HTTP/1.1 and HTTP/1.0 server on node:net that owns the public port, the
// only HTTP parser on it. Each valid request goes to the service over the front's link
// (service-link.ts); every answer is framed here (answer-writer.ts). Why it is ours and not uWS's, and
// what it checks and answers: docs/architecture.md "Why the front is ours", docs/operations.md "HTTP front".
//
// The port is opened without SO_REUSEPORT, so a second instance on the same port fails to start
// (ListenError) instead of silently sharing it.
import net, { type AddressInfo } from 'node:net';
import type { FrontSettings } from './settings';
import { ClientConnection } from './client-connection';
import type { PlaceCounts } from './places';
import { ListenError } from '../http/listen-error';
import { log } from '../log';

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
  private idleWaiters: Array<() => void> = [];

  constructor(private readonly settings: FrontSettings) {
    const events = {
      idle: () => this.checkIdle(),
      closed: (connection: ClientConnection) => {
        this.connections.delete(connection);
        this.checkIdle();
      },
    };
    this.server = net.createServer({ noDelay: true, allowHalfOpen: true }, (socket) => {
      this.connections.add(new ClientConnection(socket, settings, events));
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

  /** Places in the service held, and requests waiting for one (places.ts). */
  get upstream(): PlaceCounts {
    return this.settings.link.places.counts;
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
  }

  private busy(): boolean {
    for (const connection of this.connections) if (connection.busy) return true;
    return false;
  }

  private checkIdle(): void {
    if (this.idleWaiters.length > 0 && !this.busy()) for (const resolve of this.idleWaiters.splice(0)) resolve();
  }
}
