// The access log: one `request` line per request or call, on every interface, made by one
// writer (writeAccessLine) when it ends (answered or the client gone), and written here or, for a
// request that came through a front thread, by that thread with the answer (request-line.ts). HTTP's requests, whether the
// service or the HTTP front answered them, are recorded here with their metrics; gRPC's calls by
// its interceptor (src/oip/grpc/call-log.ts). The line names what was done and for which client
// address, never the image, the body or the key.
import type { EndedRequest, Exchange } from '../http/exchange';
import type { FrontAnswerRecord } from '../front/server';
import { requestIdFrom } from '../errors';
import { log } from '../log';
import { countAnswered } from './event-loop';
import { metrics } from './metrics';
import { writeRequestLine } from '../http/request-line';
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

/** One request or call, whatever the interface: what its `request` line says. */
export interface AccessRecord {
  requestId: string;
  interface: string;
  method: string;
  /** The route's pattern (HTTP); gRPC names its method instead and has none. */
  route?: string;
  client: string;
  model: string | undefined;
  modelVersion: string | undefined;
  /** An HTTP status, 'client_closed', or a gRPC status name. */
  status: number | string;
  seconds: number;
  /** Bytes of the request's body (HTTP) or images (gRPC; null when its message was not read). */
  bytesIn: number | null;
  /** Fields only this interface's line has, written last, in this order. */
  extra: Record<string, unknown>;
}

/** Takes a line to write it elsewhere (Exchange.carryLine); false: not taken. */
type LineCarrier = Pick<Exchange, 'carryLine'>;

/** The one writer of the `request` log line, for every interface (`carrier`: who writes it, if not this thread); it also counts the answer for the event-loop figures. */
export function writeAccessLine(r: AccessRecord, carrier?: LineCarrier): void {
  countAnswered();
  if (!log.enabled('info')) return;
  const fields = {
    request_id: r.requestId,
    interface: r.interface,
    method: r.method,
    ...(r.route !== undefined ? { route: r.route } : {}),
    client: r.client,
    model: r.model ?? null,
    model_version: r.modelVersion ?? null,
    status: r.status,
    latency_ms: Math.round(r.seconds * 1e6) / 1e3,
    bytes_in: r.bytesIn,
    ...r.extra,
  };
  if (!carrier?.carryLine(fields)) writeRequestLine(fields);
}

/** Each label set's series of catcomfort_http_requests_total, looked up once (labels are hashed on each lookup). */
const requestSeries = new Map<string, { inc(): void }>();

function countRequest(iface: Interface, route: string, model: string, status: number | 'client_closed'): void {
  const key = `${iface} ${route} ${model} ${status}`;
  let series = requestSeries.get(key);
  if (!series) requestSeries.set(key, (series = metrics.requests.labels({ interface: iface, route, model, status })));
  series.inc();
}

/** An HTTP request's line and metrics. */
function record(r: RequestRecord, carrier?: LineCarrier): void {
  const iface = interfaceOf(r.path);
  const route = r.route || 'unmatched';
  const seconds = (performance.now() - r.startedAt) / 1000;
  countRequest(iface, route, r.model ?? '', r.status);
  metrics.requestDuration.of({ interface: iface, route }).observe(seconds);
  writeAccessLine({
    requestId: r.requestId,
    interface: iface,
    method: r.method,
    route,
    client: r.client,
    model: r.model,
    modelVersion: r.modelVersion,
    status: r.status,
    seconds,
    bytesIn: r.bytesIn,
    extra: { bytes_out: r.bytesOut, detection: r.detection ?? null, ...(r.front ? { answered_by: 'front' } : {}) },
  }, carrier);
}

export function recordRequest(ex: EndedRequest): void {
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
  }, ex);
}

export function recordFrontAnswer(a: FrontAnswerRecord): void {
  record({ ...a, requestId: requestIdFrom(a.requestId), model: undefined, modelVersion: undefined, detection: undefined, front: true });
}
