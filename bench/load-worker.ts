// HTTP load generator, run as its own process by bench/load.ts: `node dist/bench/load-worker.js
// <config.json>`. Prepares the request bodies once (every fixture photo as base64 JSON), then for
// each concurrency level runs autocannon (programmatic API) for a warm-up and a measured window,
// rotating the photos across requests. Progress goes to stderr; the result is one JSON document
// on stdout.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { sampleGpu, type GpuUtilisation } from '../src/ops/gpu-sampler';

export interface LoadWorkerConfig {
  url: string;
  apiKey: string;
  photoPaths: string[];
  concurrency: number[];
  durationS: number;
  warmupS: number;
  /** Per-request timeout, seconds (a timed-out request counts as an error). */
  timeoutS: number;
  /** The GPU nvidia-smi samples during each measured window. */
  gpuDevice: number;
}

export interface LoadLevel {
  concurrency: number;
  durationS: number;
  /** All responses, 2xx or not. */
  responses: number;
  ok2xx: number;
  /** 2xx responses per second. */
  rps: number;
  /** Latency of 2xx responses, ms (measured per response, not autocannon's integer histogram). */
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  non2xx: number;
  status429: number;
  /** Non-2xx other than 429, by status. */
  otherStatus: Record<string, number>;
  errors: number;
  timeouts: number;
  /** nvidia-smi's samples during the measured window; null without an NVIDIA GPU. */
  gpu: GpuUtilisation | null;
}

interface AutocannonResult {
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  statusCodeStats: Record<string, { count: number }>;
}

interface AutocannonInstance {
  on(event: 'response', listener: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void): void;
}

type Autocannon = ((opts: Record<string, unknown>, cb: (err: Error | null, result: AutocannonResult) => void) => AutocannonInstance) & {
  track?: unknown;
};

const requireHere = createRequire(__filename);
const autocannon = requireHere('autocannon') as Autocannon;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

function runOnce(config: LoadWorkerConfig, bodies: string[], connections: number, seconds: number, startAt: number): Promise<{ result: AutocannonResult; latencies: number[]; elapsedS: number }> {
  return new Promise((resolve, reject) => {
    let next = startAt;
    const latencies: number[] = [];
    const started = performance.now();
    const instance = autocannon(
      {
        url: config.url,
        connections,
        pipelining: 1,
        duration: seconds,
        timeout: config.timeoutS,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'api-key': config.apiKey },
        requests: [
          {
            method: 'POST',
            path: new URL(config.url).pathname,
            // One photo after another across all connections.
            setupRequest: (req: Record<string, unknown>) => ({ ...req, body: bodies[next++ % bodies.length] }),
          },
        ],
      },
      (err, result) => {
        if (err) reject(err);
        else resolve({ result, latencies, elapsedS: (performance.now() - started) / 1000 });
      },
    );
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
    });
  });
}

async function main(): Promise<void> {
  const file = process.argv[2];
  if (!file) throw new Error('usage: load-worker <config.json>');
  const config = JSON.parse(readFileSync(file, 'utf8')) as LoadWorkerConfig;
  const bodies = config.photoPaths.map((p) => JSON.stringify({ image: readFileSync(p).toString('base64') }));
  const levels: LoadLevel[] = [];
  let offset = 0;
  for (const connections of config.concurrency) {
    if (config.warmupS > 0) {
      process.stderr.write(`    c=${connections}: warm-up ${config.warmupS}s\n`);
      await runOnce(config, bodies, connections, config.warmupS, offset);
    }
    process.stderr.write(`    c=${connections}: measuring ${config.durationS}s\n`);
    const sampler = sampleGpu(config.gpuDevice);
    const { result, latencies, elapsedS } = await runOnce(config, bodies, connections, config.durationS, offset);
    const gpu = await sampler.stop();
    offset += 7;
    latencies.sort((a, b) => a - b);
    const status429 = result.statusCodeStats['429']?.count ?? 0;
    const otherStatus: Record<string, number> = {};
    for (const [code, { count }] of Object.entries(result.statusCodeStats)) {
      if (!code.startsWith('2') && code !== '429') otherStatus[code] = count;
    }
    const responses = Object.values(result.statusCodeStats).reduce((a, s) => a + s.count, 0);
    // autocannon's duration is the measured window (it includes the drain of in-flight requests).
    const durationS = result.duration > 0 ? result.duration : elapsedS;
    const level: LoadLevel = {
      concurrency: connections,
      durationS,
      responses,
      ok2xx: latencies.length,
      rps: latencies.length / durationS,
      p50Ms: percentile(latencies, 50),
      p90Ms: percentile(latencies, 90),
      p99Ms: percentile(latencies, 99),
      maxMs: latencies.length ? latencies[latencies.length - 1]! : NaN,
      non2xx: result.non2xx,
      status429,
      otherStatus,
      errors: result.errors,
      timeouts: result.timeouts,
      gpu,
    };
    levels.push(level);
    process.stderr.write(
      `    c=${connections}: ${level.rps.toFixed(1)} req/s, p50 ${level.p50Ms.toFixed(1)} ms, p90 ${level.p90Ms.toFixed(1)} ms, p99 ${level.p99Ms.toFixed(1)} ms, ` +
        `non-2xx ${level.non2xx} (429: ${status429}), errors ${level.errors}, timeouts ${level.timeouts}\n`,
    );
  }
  process.stdout.write(`${JSON.stringify({ levels })}\n`);
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`load worker failed: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exit(1);
  },
);
