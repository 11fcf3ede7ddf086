// One measured window of HTTP load with autocannon's programmatic API: `connections` keep-alive
// connections, one request in flight on each, the prepared requests rotated across all of them.
import { createRequire } from 'node:module';
import type { WindowResult } from './load-window';

/** A prepared request: its body and the headers that go with that body (besides content-length and the key). */
export interface HttpRequest {
  headers?: Record<string, string>;
  body: string | Buffer;
}

interface AutocannonResult {
  duration: number;
  errors: number;
  timeouts: number;
  statusCodeStats: Record<string, { count: number }>;
}

interface AutocannonInstance {
  on(event: 'response', listener: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void): void;
}

type Autocannon = (opts: Record<string, unknown>, cb: (err: Error | null, result: AutocannonResult) => void) => AutocannonInstance;

const requireHere = createRequire(__filename);
const autocannon = requireHere('autocannon') as Autocannon;

export function autocannonWindow(
  target: { url: string; apiKey: string; timeoutS: number },
  requests: HttpRequest[],
  connections: number,
  seconds: number,
  startAt: number,
): Promise<WindowResult> {
  return new Promise((resolve, reject) => {
    let next = startAt;
    const latencies: number[] = [];
    const started = performance.now();
    const instance = autocannon(
      {
        url: target.url,
        connections,
        pipelining: 1,
        duration: seconds,
        timeout: target.timeoutS,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'api-key': target.apiKey },
        requests: [
          {
            method: 'POST',
            path: new URL(target.url).pathname,
            // One photo after another across all connections.
            setupRequest: (req: Record<string, unknown>) => {
              const r = requests[next++ % requests.length]!;
              return { ...req, headers: { ...(req.headers as Record<string, string>), ...r.headers }, body: r.body };
            },
          },
        ],
      },
      (err, result) => {
        if (err) return reject(err);
        const refused: Record<string, number> = {};
        for (const [code, { count }] of Object.entries(result.statusCodeStats)) {
          if (!code.startsWith('2') && code !== '429') refused[code] = count;
        }
        resolve({
          latencies,
          responses: Object.values(result.statusCodeStats).reduce((a, s) => a + s.count, 0),
          overloaded: result.statusCodeStats['429']?.count ?? 0,
          refused,
          errors: result.errors,
          timeouts: result.timeouts,
          // autocannon's duration is the measured window (it includes the drain of in-flight requests).
          durationS: result.duration > 0 ? result.duration : (performance.now() - started) / 1000,
        });
      },
    );
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
    });
  });
}
