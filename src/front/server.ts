// The HTTP service: the front on the public port (front.ts; on the main thread or on threads:
// front-threads.ts) and each request it hands over dispatched to our router, with 404/405/503 and
// handler failures answered by the error renderer of the interface the path belongs to (Router.mount).
// The way a request travels: docs/architecture.md "The life of a request".
import { Exchange, type EndedRequest, type ResponseSink } from '../http/exchange';
import type { ServiceHead } from '../http/request-head';
import { TrustedProxies } from './client-address';
import { HttpFront } from './front';
import { FrontThreads, type FrontThreadsOptions, type ThreadHeap } from './front-threads';
import { localLink } from './local-link';
import type { PlaceLimits } from './places';
import type { FrontAnswer } from './settings';
import { ApiError, requestIdFrom } from '../errors';
import { errorAnswer, methodNotAllowedAnswer, notFoundAnswer, type Answer, type ErrorRenderer } from '../http/error-answers';
import { Router } from '../http/router';
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
  /** The body limit: over it, the front answers 413 itself to `Expect: 100-continue` (and past MAX_DISCARD_BYTES), else reads and drops the body. */
  maxBodyBytes: number;
  /** The front's limits and trusted proxies (Config.front: CATCOMFORT_UPSTREAM_*, CATCOMFORT_TRUSTED_PROXIES, CATCOMFORT_CLIENT_IDLE_TIMEOUT_MS). */
  front: FrontConfig;
  /** Longest a request waits for a place in the service, then 429 (the service: its request timeout). */
  upstreamWaitMs: number;
  /** Until this returns true, requests get 503 unless `alwaysOpen` (default: ready at once). */
  isReady?: () => boolean;
  /** Paths dispatched before readiness and while shutting down (health, readiness, metrics). */
  alwaysOpen?: (path: string) => boolean;
  /** The stream server's unix socket, to which live stream upgrades are handed (front/upgrade-relay.ts); unset: none. */
  streamSocket?: string;
  /** Hears every request once it ends: answered, or its client gone. */
  onRequestEnd?: (ex: EndedRequest) => void;
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
  private front: HttpFront | FrontThreads | null = null;
  private closing = false;
  private inFlight = 0;
  private idle: Array<() => void> = [];

  constructor(
    readonly router: Router,
    private readonly options: HttpServerOptions,
  ) {}

  /** One request, handed over by the front. */
  private serve(res: ResponseSink, head: ServiceHead, startedAt?: number): void {
    this.inFlight++;
    const ex = new Exchange(res, head, (done) => this.settled(done), startedAt);
    if (this.options.alwaysOpen?.(ex.path)) dispatch(this.router, ex);
    else if (this.closing) refuse(this.router, ex, true);
    else if (this.options.isReady && !this.options.isReady()) refuse(this.router, ex, false);
    else dispatch(this.router, ex);
  }

  /** The front's places in the service held (open; idle always 0) and requests waiting for one. */
  get upstream(): { open: number; idle: number; waiting: number } {
    return this.front?.upstream ?? { open: 0, idle: 0, waiting: 0 };
  }

  /** The V8 heaps of the front's threads, summed; null while the front runs on the main thread. */
  get frontThreadsHeap(): ThreadHeap | null {
    return this.front instanceof FrontThreads ? this.front.heap : null;
  }

  /** Requests received and not yet answered (nor abandoned by their client). */
  get requestsInFlight(): number {
    return this.inFlight;
  }

  private settled(ex: EndedRequest): void {
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

  /** Starts the front on host:port (0 = any free port). Resolves with the port; rejects with ListenError when the port cannot be opened. */
  async listen(host: string, port: number): Promise<number> {
    const { front: limits, onFrontAnswer, frontThreads } = this.options;
    const onAnswer = onFrontAnswer && ((a: FrontAnswer) => onFrontAnswer({ ...a, route: this.routeOf(a.method, a.path) }));
    const places: PlaceLimits = { places: limits.upstreamConnections, queue: limits.upstreamQueue, waitMs: this.options.upstreamWaitMs };
    const common = { maxBodyBytes: this.options.maxBodyBytes, idleTimeoutMs: limits.idleTimeoutMs, streamSocket: this.options.streamSocket ?? null };
    const service = { serve: (res: ResponseSink, head: ServiceHead, startedAt: number) => this.serve(res, head, startedAt) };
    this.front =
      frontThreads && limits.httpThreads >= 2
        ? this.frontOnThreads(limits.httpThreads, frontThreads, places, common, onAnswer, service)
        : new HttpFront({
            ...common,
            link: localLink(places, service),
            trustedProxies: new TrustedProxies(limits.trustedProxies),
            onAnswer,
            allowedMethods: (p) => this.router.allowedMethods(p),
            rendererFor: (p) => this.router.rendererFor(p),
          });
    try {
      return await this.front.listen(host, port);
    } catch (error) {
      this.stopListening();
      throw error;
    }
  }

  /** The front on `count` threads, each with its share of the places (rounded up: the sums may pass the settings by count - 1), told of every change of routes. */
  private frontOnThreads(
    count: number,
    start: FrontThreadsStart,
    places: PlaceLimits,
    common: { maxBodyBytes: number; idleTimeoutMs: number; streamSocket: string | null },
    onAnswer: ((a: FrontAnswer) => void) | undefined,
    service: Pick<FrontThreadsOptions, 'serve'>,
  ): FrontThreads {
    const share = (n: number) => Math.max(1, Math.ceil(n / count));
    const front = new FrontThreads({
      count,
      entry: start.entry,
      dupFd: start.dupFd,
      onAnswer,
      ...service,
      data: {
        ...common,
        places: { places: share(places.places), queue: share(places.queue), waitMs: places.waitMs },
        trustedProxies: [...this.options.front.trustedProxies],
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
}
