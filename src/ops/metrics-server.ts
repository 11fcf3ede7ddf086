// CATCOMFORT_METRICS_PORT: a second, plain node:http listener that serves only GET /metrics,
// without a key, so Prometheus can scrape a port that is not published to clients.
import http from 'node:http';
import { ListenError } from '../http/listen-error';
import { sendMetrics } from './routes';

export async function startMetricsServer(host: string, port: number): Promise<{ port: number; close(): void }> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain; charset=utf-8' }).end('Only GET /metrics is served on this port.\n');
      return;
    }
    sendMetrics((status, headers, body) => res.writeHead(status, headers).end(body));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(ListenError.from(host, port, error, 'CATCOMFORT_METRICS_PORT')));
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as { port: number }).port,
    close: () => {
      server.close();
      server.closeAllConnections();
    },
  };
}
