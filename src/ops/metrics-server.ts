// CATCOMFORT_METRICS_PORT: a second, plain node:http listener that serves only GET /metrics,
// without a key, so Prometheus can scrape a port that is not published to clients.
import http from 'node:http';
import { listenBeside, type SideListener } from '../http/side-listener';
import { sendMetrics } from './routes';

export function startMetricsServer(host: string, port: number): Promise<SideListener> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('Only GET /metrics is served on this port.\n');
      return;
    }
    sendMetrics((status, headers, body) => res.writeHead(status, headers).end(body));
  });
  return listenBeside(server, host, port, 'CATCOMFORT_METRICS_PORT');
}
