// The uWS application: one catch-all route feeding our router, with 404/405/503 and handler
// failures answered by the error renderer of the interface the path belongs to (Router.mount).
// uWS listens on a private unix socket; the public port belongs to the HTTP front (front/front.ts).
import { rmSync } from 'node:fs';
import path from 'node:path';
import { Exchange, type RequestSource, type ResponseSink } from './exchange';
import { TrustedProxies } from './front/client-address';
import { HttpFront } from './front/front';
import { FrontThreads } from './front/front-threads';
import { localDirect } from './front/local-direct';
import type { FrontAnswer } from './front/settings';
import { ApiError, requestIdFrom } from '../errors';
import { errorAnswer, methodNotAllowedAnswer, notFoundAnswer, type Answer, type ErrorRenderer } from './error-answers';
import { Router } from './router';
import { createSocketDir, SOCKET_NAME } from './socket-dir';
import { uws, type ListenSocket, type TemplatedApp } from './uws';
import type { FrontConfig } from '../config';
import { log } from '../log';

function reply(ex: Exchange, answer: Answer, closeAfter = false): void {
  ex.send(answer.status, answer.headers, answer.body, closeAfter);
}

/**
 * 503 in the interface's format with Retry-After: before readiness (the connection stays open), or
 * while shutting down (requests arriving on kept-alive connections; the connection closes).
 */
function refuse(router: Router, ex: Exchange, shuttingDown: boolean): void {
  const answer = errorAnswer(router.rendererFor(ex.path), ex.header('x-request-id'), 'unavailable', {
    message: shuttingDown ? 'The service is shutting down.' : 'The service is starting; model packs are still loading.',
    headers: { 'Retry-After': shuttingDown ? '1' : '5' },
  });
  reply(ex, answer, shuttingDown);
}

function dispatch(router: Router, ex: Exchange): void {
  const match = router.match(ex.method, ex.path);
  if (match.kind === 'found') {
    ex.params = match.params;
    ex.route = match.pattern;
    try {
      match.handler(ex);
    } catch (error) {
      log.error('handler threw', { path: ex.path, error: (error as Error)?.stack ?? String(error) });
      reply(ex, router.rendererFor(ex.path)(requestIdFrom(ex.header('x-request-id')), new ApiError('internal_error')));
    }
    return;
  }
  const requestId = ex.header('x-request-id');
  const render = router.rendererFor(ex.path);
  if (match.kind === 'method_not_allowed') reply(ex, methodNotAllowedAnswer(render, requestId, ex.method, match.allow));
  else reply(ex, notFoundAnswer(render, requestId));
}

/** An answer the HTTP front gave itself, with the route pattern its path and method match ('' for none). */
export interface FrontAnswerRecord extends FrontAnswer {
  route: string;
}

export interface HttpServerOptions {
  /** The body limit, for the front's early 413 to `Expect: 100-continue`. */
  maxBodyBytes: number;
  /** The front's limits and trusted proxies (Config.front: CATCOMFORT_UPSTREAM_*, CATCOMFORT_TRUSTED_PROXIES, CATCOMFORT_CLIENT_IDLE_TIMEOUT_MS). */
  front: FrontConfig;
  /** Longest a request waits for a connection to uWS, then 429 (the service: its request timeout). */
  upstreamWaitMs: number;
  /** Until this returns true, requests get 503 unless `alwaysOpen` (default: ready at once). */
  isReady?: () => boolean;
  /** Paths dispatched before readiness and while shutting down (health, readiness, metrics). */
  alwaysOpen?: (path: string) => boolean;
  /** Hears every request once it ends: answered, or its client gone. */
  onRequestEnd?: (ex: Exchange) => void;
  /** Hears every answer the front gives itself. */
  onFrontAnswer?: (record: FrontAnswerRecord) => void;
  /** What starting the front on worker threads (front.httpThreads >= 2, front/front-threads.ts) takes from the floors above. */
  frontThreads?: FrontThreadsStart;
}

/** The front thread's script, the addon's dupFd, and the renderers' names. */
export interface FrontThreadsStart {
  entry: string;
  dupFd(fd: number): number;
  nameOfRenderer(render: ErrorRenderer): string;
}

export class HttpServer {
  private listenSocket: ListenSocket | null = null;
  private front: HttpFront | FrontThreads | null = null;
  private socketDir: string | null = null;
  private readonly removeSocketDir = () => this.releaseSocketDir();
  private closing = false;
  private inFlight = 0;
  private idle: Array<() => void> = [];
  readonly app: TemplatedApp;

  constructor(
    readonly router: Router,
    private readonly options: HttpServerOptions,
  ) {
    this.app = uws.App();
    this.app.any('/*', (res, req) => this.serve(res, req));
  }

  /** One request, from uWS or a front thread's direct way. */
  private serve(res: ResponseSink, req: RequestSource, startedAt?: number): void {
    this.inFlight++;
    const ex = new Exchange(res, req, (done) => this.settled(done), startedAt);
    if (this.options.alwaysOpen?.(ex.path)) dispatch(this.router, ex);
    else if (this.closing) refuse(this.router, ex, true);
    else if (this.options.isReady && !this.options.isReady()) refuse(this.router, ex, false);
    else dispatch(this.router, ex);
  }

  /** The front's connections to uWS (open, idle) and requests waiting for one. */
  get upstream(): { open: number; idle: number; waiting: number } {
    return this.front?.upstream ?? { open: 0, idle: 0, waiting: 0 };
  }

  /** Requests received and not yet answered (nor abandoned by their client). */
  get requestsInFlight(): number {
    return this.inFlight;
  }

  private settled(ex: Exchange): void {
    this.inFlight--;
    if (this.inFlight === 0) for (const resolve of this.idle.splice(0)) resolve();
    this.options.onRequestEnd?.(ex);
  }

  /**
   * Resolves once every request in progress has been answered (or its client left) and the answers
   * have left through the front, or after timeoutMs. Idle client connections are then ended.
   */
  async drain(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    if (this.inFlight > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        this.idle.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    await this.front?.drain(Math.max(0, deadline - Date.now()));
  }

  /**
   * Starts uWS on a private unix socket, then the front on host:port (0 = any free port).
   * Resolves with the port; rejects with ListenError when the port cannot be opened.
   */
  async listen(host: string, port: number): Promise<number> {
    this.socketDir = await createSocketDir();
    process.once('exit', this.removeSocketDir);
    const socketPath = path.join(this.socketDir, SOCKET_NAME);
    try {
      this.listenSocket = await new Promise<ListenSocket>((resolve, reject) => {
        this.app.listen_unix((socket) => {
          if (socket) resolve(socket);
          else reject(new Error(`uWS cannot listen on its private socket ${socketPath}`));
        }, socketPath);
      });
      const { front: limits, onFrontAnswer, frontThreads } = this.options;
      const onAnswer = onFrontAnswer && ((a: FrontAnswer) => onFrontAnswer({ ...a, route: this.routeOf(a.method, a.path) }));
      const common = { upstreamPath: socketPath, upstreamWaitMs: this.options.upstreamWaitMs, maxBodyBytes: this.options.maxBodyBytes, idleTimeoutMs: limits.idleTimeoutMs };
      this.front =
        frontThreads && limits.httpThreads >= 2
          ? this.frontOnThreads(limits.httpThreads, frontThreads, common, onAnswer)
          : new HttpFront({
              ...common,
              upstreamConnections: limits.upstreamConnections,
              upstreamQueue: limits.upstreamQueue,
              trustedProxies: new TrustedProxies(limits.trustedProxies),
              onAnswer,
              allowedMethods: (p) => this.router.allowedMethods(p),
              rendererFor: (p) => this.router.rendererFor(p),
              direct: localDirect(limits.upstreamConnections + limits.upstreamQueue, (res, req, startedAt) => this.serve(res, req, startedAt)),
            });
      return await this.front.listen(host, port);
    } catch (error) {
      this.close();
      throw error;
    }
  }

  /** The front on `count` threads, each with its share of the pool's limits (so the sums stay the settings), told of every change of routes. */
  private frontOnThreads(
    count: number,
    start: FrontThreadsStart,
    common: { upstreamPath: string; upstreamWaitMs: number; maxBodyBytes: number; idleTimeoutMs: number },
    onAnswer: ((a: FrontAnswer) => void) | undefined,
  ): FrontThreads {
    const limits = this.options.front;
    const share = (n: number) => Math.max(1, Math.ceil(n / count));
    const front = new FrontThreads({
      count,
      entry: start.entry,
      dupFd: start.dupFd,
      onAnswer,
      serve: (res, req, startedAt) => this.serve(res, req, startedAt),
      data: {
        ...common,
        upstreamConnections: share(limits.upstreamConnections),
        upstreamQueue: share(limits.upstreamQueue),
        trustedProxies: [...limits.trustedProxies],
        router: this.router.outline(start.nameOfRenderer),
      },
    });
    let pending = false;
    this.router.onChange(() => {
      if (pending) return;
      pending = true;
      queueMicrotask(() => {
        pending = false;
        front.setRouter(this.router.outline(start.nameOfRenderer));
      });
    });
    return front;
  }

  private routeOf(method: string, path: string): string {
    const match = this.router.match(method, path);
    return match.kind === 'found' ? match.pattern : '';
  }

  /** The front's threads (when it has its own) take nice value `nice`; the main thread sets its own. */
  setFrontNice(nice: number): void {
    if (this.front instanceof FrontThreads) this.front.setNice(nice);
  }

  /** Stops accepting connections; requests in progress finish, new ones on open connections get 503. */
  stopListening(): void {
    this.closing = true;
    this.front?.close();
  }

  /** Closes uWS's private socket and removes its folder (after stopListening and drain). */
  close(): void {
    this.stopListening();
    if (this.listenSocket) {
      uws.us_listen_socket_close(this.listenSocket);
      this.listenSocket = null;
    }
    this.releaseSocketDir();
  }

  private releaseSocketDir(): void {
    process.off('exit', this.removeSocketDir);
    if (this.socketDir) rmSync(this.socketDir, { recursive: true, force: true });
    this.socketDir = null;
  }
}
