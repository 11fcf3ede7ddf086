// The uWS application: one catch-all route feeding our router, with 404/405 answered
// in the format of the interface the path belongs to (v2 ErrorResponse or v1 {detail}).
import { Exchange } from './exchange';
import { requestIdFrom } from './request-id';
import { Router } from './router';
import { uws, type ListenSocket, type TemplatedApp } from './uws';
import { ApiError } from '../v2/errors';
import { sendError } from '../v2/respond';
import { log } from '../log';

/** Paths answered with the v2 ErrorResponse (v2 itself and the scan interface); others get v1's {detail}. */
function isV2(path: string): boolean {
  return path === '/v2' || path.startsWith('/v2/') || path === '/scan' || path.startsWith('/scan/');
}

function sendDetail(ex: Exchange, status: number, detail: string, headers: Record<string, string> = {}, closeAfter = false): void {
  ex.send(status, { 'Content-Type': 'application/json', ...headers }, JSON.stringify({ detail }), closeAfter);
}

/** While shutting down: requests arriving on kept-alive connections get 503 and the connection closes. */
function refuse(ex: Exchange): void {
  const headers = { 'Retry-After': '1' };
  if (isV2(ex.path)) {
    sendError(ex, requestIdFrom(ex.header('x-request-id')), new ApiError('unavailable', 'The service is shutting down.', {}, headers), true);
  } else {
    sendDetail(ex, 503, 'Service Unavailable', headers, true);
  }
}

function dispatch(router: Router, ex: Exchange): void {
  const match = router.match(ex.method, ex.path);
  if (match.kind === 'found') {
    ex.params = match.params;
    try {
      match.handler(ex);
    } catch (error) {
      log.error('handler threw', { path: ex.path, error: (error as Error)?.stack ?? String(error) });
      if (isV2(ex.path)) sendError(ex, requestIdFrom(ex.header('x-request-id')), new ApiError('internal_error'));
      else ex.send(500, { 'Content-Type': 'text/plain; charset=utf-8' }, 'Internal Server Error');
    }
    return;
  }
  if (isV2(ex.path)) {
    const requestId = requestIdFrom(ex.header('x-request-id'));
    if (match.kind === 'method_not_allowed') {
      const allow = match.allow.join(', ');
      sendError(ex, requestId, new ApiError('method_not_allowed', `Method ${ex.method} is not allowed here; use ${allow}.`, {}, { Allow: allow }));
    } else {
      sendError(ex, requestId, new ApiError('not_found'));
    }
    return;
  }
  if (match.kind === 'method_not_allowed') sendDetail(ex, 405, 'Method Not Allowed', { Allow: match.allow.join(', ') });
  else sendDetail(ex, 404, 'Not Found');
}

export class HttpServer {
  private listenSocket: ListenSocket | null = null;
  private closing = false;
  private inFlight = 0;
  private idle: Array<() => void> = [];
  readonly app: TemplatedApp;

  constructor(readonly router: Router) {
    this.app = uws.App();
    this.app.any('/*', (res, req) => {
      this.inFlight++;
      const ex = new Exchange(res, req, () => this.settled());
      if (this.closing) refuse(ex);
      else dispatch(router, ex);
    });
  }

  private settled(): void {
    this.inFlight--;
    if (this.inFlight === 0) for (const resolve of this.idle.splice(0)) resolve();
  }

  /** Resolves once every request in progress has been answered (or its client left), or after timeoutMs. */
  drain(timeoutMs: number): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.idle.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.app.listen(host, port, (socket) => {
        if (!socket) {
          reject(new Error(`Cannot listen on ${host}:${port}`));
          return;
        }
        this.listenSocket = socket;
        resolve(uws.us_socket_local_port(socket as never));
      });
    });
  }

  /** Stops accepting connections; requests in progress finish, new ones on open connections get 503. */
  stopListening(): void {
    this.closing = true;
    if (this.listenSocket) {
      uws.us_listen_socket_close(this.listenSocket);
      this.listenSocket = null;
    }
  }
}
