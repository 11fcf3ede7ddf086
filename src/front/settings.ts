// What the HTTP front is set up with (FrontSettings) and what it reports of each answer it gives
// itself and of each request it held whose client left (FrontAnswer): shared by the front and its
// client connections.
import type { ErrorRenderer } from '../http/error-answers';
import type { TrustedProxies } from './client-address';
import type { ServiceLink } from './service-link';

export interface FrontSettings {
  /** The way to the service, with its places (service-link.ts): a front thread's, or the main thread's own (local-link.ts). */
  link: ServiceLink;
  trustedProxies: TrustedProxies;
  maxBodyBytes: number;
  /** Idle limit of a client connection between requests and while a head or chunked body arrives. */
  idleTimeoutMs: number;
  /** The methods the service routes for a path; empty when no route matches it. */
  allowedMethods(path: string): string[];
  /** How the interface a path belongs to writes errors. */
  rendererFor(path: string): ErrorRenderer;
  /** The stream server's unix socket, to which WebSocket upgrades of the live stream are handed (upgrade-relay.ts); null: none. */
  streamSocket: string | null;
  /** Hears every answer the front gives itself (refusals and 429), and every request it held whose client left, for the access log and metrics. */
  onAnswer?(record: FrontAnswer): void;
}

/** One answer of the front's own, or a request it held whose client left. */
export interface FrontAnswer {
  /** Empty when the request line could not be read. */
  method: string;
  path: string;
  requestId: string | undefined;
  client: string;
  /** client_closed: the client left while the front held the request (not yet handed to the service). */
  status: number | 'client_closed';
  /** When the head arrived whole (performance.now()), or when the refusal was decided. */
  startedAt: number;
  bytesIn: number;
  bytesOut: number;
}
