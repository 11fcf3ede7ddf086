// One access-log line and the request metrics per request, written when it ends (answered or
// the client gone). The line names what was done, never the image, the body or the key.
import type { Exchange } from '../http/exchange';
import { requestIdFrom } from '../http/request-id';
import { log } from '../log';
import { metrics } from './metrics';

export type Interface = 'v1' | 'v2' | 'scan' | 'ops';

/** Health, readiness, metrics and the root redirect: answered before readiness and while draining. */
export const OPS_PATHS: ReadonlySet<string> = new Set(['/', '/healthz', '/readyz', '/metrics']);

export function interfaceOf(path: string): Interface {
  if (OPS_PATHS.has(path)) return 'ops';
  if (path === '/v2' || path.startsWith('/v2/')) return 'v2';
  if (path === '/scan' || path.startsWith('/scan/')) return 'scan';
  return 'v1';
}

export function recordRequest(ex: Exchange): void {
  const iface = interfaceOf(ex.path);
  const route = ex.route || 'unmatched';
  const seconds = (performance.now() - ex.startedAt) / 1000;
  const status = ex.status ?? 'client_closed';
  metrics.requests.inc({ interface: iface, route, model: ex.notes.model ?? '', status });
  metrics.requestDuration.observe({ interface: iface, route }, seconds);
  log.info('request', {
    request_id: ex.answeredRequestId ?? requestIdFrom(ex.header('x-request-id')),
    interface: iface,
    method: ex.method,
    route,
    model: ex.notes.model ?? null,
    status,
    latency_ms: Math.round(seconds * 1e6) / 1e3,
    bytes_in: ex.bytesIn,
    bytes_out: ex.bytesOut,
    detection: ex.notes.detection ?? null,
  });
}
