// GET /healthz (the process is alive), GET /readyz (every pack warmed up, not draining) and
// GET /metrics (Prometheus text format; behind the API key, open, or off per CATCOMFORT_METRICS;
// `?name=N&name=M` serves only those metrics, a cheap scrape for the benchmarks).
// None of them needs a key except /metrics in `key` mode; all answer before readiness.
import type { KeyRing } from '../keys/key-ring';
import type { Exchange } from '../http/exchange';
import type { Router } from '../http/router';
import { log } from '../log';
import type { MetricsConfig } from '../config';
import { metrics } from './metrics';
import type { Readiness } from './readiness';

const NO_STORE = { 'Cache-Control': 'no-store' };

function json(ex: Exchange, status: number, body: unknown, headers: Record<string, string> = {}): void {
  ex.send(status, { 'Content-Type': 'application/json', ...NO_STORE, ...headers }, JSON.stringify(body));
}

/** Answers a scrape with the metrics text (only `names` when given), or 500 when collecting fails. */
export function sendMetrics(send: (status: number, headers: Record<string, string>, body: string) => void, names: string[] = []): void {
  metrics.scrape(names).then(
    ({ contentType, body }) => send(200, { 'Content-Type': contentType, ...NO_STORE }, body),
    (error: unknown) => {
      log.error('metrics scrape failed', { error: (error as Error)?.stack ?? String(error) });
      send(500, { 'Content-Type': 'text/plain; charset=utf-8' }, 'metrics collection failed\n');
    },
  );
}

export function registerOps(router: Router, ctx: { readiness: Readiness; keys: KeyRing; access: MetricsConfig['access'] }): void {
  router
    .add('GET', '/healthz', (ex) => json(ex, 200, { status: 'alive' }))
    .add('GET', '/readyz', (ex) => {
      const report = ctx.readiness.report();
      if (report.status === 'ready') json(ex, 200, report);
      else json(ex, 503, report, { 'Retry-After': report.status === 'starting' ? '5' : '1' });
    });
  if (ctx.access === 'off') return;
  router.add('GET', '/metrics', (ex) => {
    if (ctx.access === 'key' && !ctx.keys.check(ex.header('api-key'))) return json(ex, 401, { detail: 'Invalid or missing API key' });
    sendMetrics((status, headers, body) => ex.send(status, headers, body), new URLSearchParams(ex.query).getAll('name'));
  });
}
