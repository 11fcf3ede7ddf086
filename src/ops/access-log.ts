// One access-log line and the request metrics per request, written when it ends (answered or
// the client gone), whether the service or the HTTP front answered it. The line names what was
// done and for which client address, never the image, the body or the key.
import type { Exchange } from '../http/exchange';
import type { FrontAnswerRecord } from '../http/server';
import { requestIdFrom } from '../errors';
import { log } from '../log';
import { countAnswered } from './event-loop';
import { metrics } from './metrics';
import { observeStages } from './stage-summary';

export type Interface = 'v1' | 'v2' | 'scan' | 'ops';

/** Health, readiness, metrics and the root redirect: answered before readiness and while draining. */
export const OPS_PATHS: ReadonlySet<string> = new Set(['/', '/healthz', '/readyz', '/metrics']);

export function interfaceOf(path: string): Interface {
  if (OPS_PATHS.has(path)) return 'ops';
  if (path === '/v2' || path.startsWith('/v2/')) return 'v2';
  if (path === '/scan' || path.startsWith('/scan/')) return 'scan';
  return 'v1';
}

interface RequestRecord {
  requestId: string;
  path: string;
  method: string;
  route: string;
  client: string;
  model: string | undefined;
  /** The pack version that answered, where one did. */
  modelVersion: string | undefined;
  status: number | 'client_closed';
  startedAt: number;
  bytesIn: number;
  bytesOut: number;
  detection: string | undefined;
  /** The HTTP front answered it without passing it on. */
  front: boolean;
}

function record(r: RequestRecord): void {
  const iface = interfaceOf(r.path);
  const route = r.route || 'unmatched';
  const seconds = (performance.now() - r.startedAt) / 1000;
  countAnswered();
  metrics.requests.inc({ interface: iface, route, model: r.model ?? '', status: r.status });
  metrics.requestDuration.observe({ interface: iface, route }, seconds);
  log.info('request', {
    request_id: r.requestId,
    interface: iface,
    method: r.method,
    route,
    client: r.client,
    model: r.model ?? null,
    model_version: r.modelVersion ?? null,
    status: r.status,
    latency_ms: Math.round(seconds * 1e6) / 1e3,
    bytes_in: r.bytesIn,
    bytes_out: r.bytesOut,
    detection: r.detection ?? null,
    ...(r.front ? { answered_by: 'front' } : {}),
  });
}

export function recordRequest(ex: Exchange): void {
  // The stages around the analyses (the analyses' own are observed by Model.analyze).
  if (ex.notes.model !== undefined && ex.stages?.read !== undefined) observeStages(ex.notes.model, { read: ex.stages.read, convert: ex.stages.convert });
  record({
    requestId: ex.answeredRequestId ?? requestIdFrom(ex.header('x-request-id')),
    path: ex.path,
    method: ex.method,
    route: ex.route,
    client: ex.peerAddress,
    model: ex.notes.model,
    modelVersion: ex.notes.modelVersion,
    status: ex.status ?? 'client_closed',
    startedAt: ex.startedAt,
    bytesIn: ex.bytesIn,
    bytesOut: ex.bytesOut,
    detection: ex.notes.detection,
    front: false,
  });
}

export function recordFrontAnswer(a: FrontAnswerRecord): void {
  record({ ...a, requestId: requestIdFrom(a.requestId), model: undefined, modelVersion: undefined, detection: undefined, front: true });
}

/** One gRPC call (src/oip/grpc/): its line and metrics, in the shape of an HTTP request's. */
export interface GrpcCallRecord {
  requestId: string;
  /** The service's method, e.g. ModelInfer. */
  method: string;
  client: string;
  model?: string;
  modelVersion?: string;
  /** The name of the status the client experienced (OK, INVALID_ARGUMENT, ...; CANCELLED when it left first, DEADLINE_EXCEEDED once its deadline had passed). */
  code: string;
  startedAt: number;
  /** Bytes of the request's images; null when its message was not read (refused, or the client left first). */
  bytesIn: number | null;
  images?: number;
}

export function recordGrpcCall(r: GrpcCallRecord): void {
  const seconds = (performance.now() - r.startedAt) / 1000;
  countAnswered();
  metrics.grpcCalls.inc({ method: r.method, model: r.model ?? '', code: r.code });
  metrics.grpcCallDuration.observe({ method: r.method }, seconds);
  log.info('request', {
    request_id: r.requestId,
    interface: 'grpc',
    method: r.method,
    client: r.client,
    model: r.model ?? null,
    model_version: r.modelVersion ?? null,
    status: r.code,
    latency_ms: Math.round(seconds * 1e6) / 1e3,
    bytes_in: r.bytesIn,
    ...(r.images !== undefined ? { images: r.images } : {}),
  });
}
