// What the HTTP front is set up with (FrontSettings) and what it reports of each answer it gives
// itself and of each request it held whose client left (FrontAnswer): shared by the front and its
// client connections.
import type { ErrorRenderer } from '../error-answers';
import type { TrustedProxies } from './client-address';
import type { DirectLink } from './direct-exchange';

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
  /** The direct way to the service for POST bodies that fit (direct-exchange.ts): a front thread's to the main thread, or the main thread's own (local-direct.ts). */
  direct?: DirectLink;
  /** Hears every answer the front gives itself (refusals, 429 and 503), and every request it held whose client left, for the access log and metrics. */
  onAnswer?(record: FrontAnswer): void;
}

/** One answer of the front's own, or a request it held whose client left. */
export interface FrontAnswer {
  /** Empty when the request line could not be read. */
  method: string;
  path: string;
  requestId: string | undefined;
  client: string;
  /** client_closed: the client left while the front held the request (not yet passed to the service). */
  status: number | 'client_closed';
  /** When the head arrived whole (performance.now()), or when the refusal was decided. */
  startedAt: number;
  bytesIn: number;
  bytesOut: number;
}
