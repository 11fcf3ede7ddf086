// Load generator, run as its own process by bench/load.ts: `node dist/bench/load-worker.js
// <config.json>`. Prepares the requests once (every fixture photo as the target's protocol sends it,
// bench/protocols.ts), then for each concurrency level runs a warm-up and a measured window,
// rotating the photos across requests: autocannon (bench/load-autocannon.ts) for /v2/predict and OIP
// REST, a closed loop of gRPC calls (bench/load-window.ts, bench/grpc-client.ts) for gRPC. Progress
// goes to stderr; the result is one JSON document on stdout.
import { readFileSync } from 'node:fs';
import { sampleGpu, type GpuUtilisation } from '../src/ops/gpu-sampler';
import { scrapeStages, windowFigures, type WindowFigures } from '../src/cli/stage-scrape';
import { percentile } from './common';
import { processTreeCpuS } from './process-cpu';
import { grpcSender } from './grpc-client';
import { autocannonWindow, type HttpRequest } from './load-autocannon';
import { closedLoopWindow, refusals, type WindowResult } from './load-window';
import { oipBinaryRequest, predictBody, protocolOf } from './protocols';


export interface LoadWorkerConfig {
  /** The target; its protocol follows from it (bench/protocols.ts protocolOf). */
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
  /** LoadOptions.metricsOrigin. */
  metricsOrigin?: string;
  /** LoadOptions.serverPid. */
  serverPid?: number;
}

export interface LoadLevel {
  concurrency: number;
  durationS: number;
  /** All responses, 2xx or not (gRPC: every call the service answered, OK or not; 2xx below: OK). */
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
  /** gRPC: UNAVAILABLE with error-code overloaded, the service's 429. */
  status429: number;
  /** Non-2xx other than 429, by status (gRPC: by status name). */
  otherStatus: Record<string, number>;
  errors: number;
  timeouts: number;
  /** nvidia-smi's samples during the measured window; null without an NVIDIA GPU. */
  gpu: GpuUtilisation | null;
  /** Our service: each stage's mean ms, the event loop's busy share and main-thread us per request in the window (src/cli/stage-scrape.ts); null for peers. */
  stagesMs?: WindowFigures['stagesMs'];
  eventLoop?: WindowFigures['eventLoop'];
  /** CPU seconds the server's processes used in the measured window (LoadOptions.serverPid); absent without it. */
  serverCpuS?: number;
}

/** The measured window at a concurrency for the config's target: autocannon for HTTP, the closed loop for gRPC. */
function windowRunner(config: LoadWorkerConfig): (connections: number, seconds: number, startAt: number) => Promise<WindowResult> {
  const photos = config.photoPaths.map((p) => readFileSync(p));
  const protocol = protocolOf(config.url);
  if (protocol === 'grpc') {
    const send = grpcSender(config.url, config.apiKey, photos, config.timeoutS);
    return (connections, seconds, startAt) => closedLoopWindow(send, connections, seconds, startAt);
  }
  const requests: HttpRequest[] = photos.map((p) => (protocol === 'oip-rest' ? oipBinaryRequest(p) : { body: predictBody(p) }));
  return (connections, seconds, startAt) => autocannonWindow(config, requests, connections, seconds, startAt);
}

async function main(): Promise<void> {
  const file = process.argv[2];
  if (!file) throw new Error('usage: load-worker <config.json>');
  const config = JSON.parse(readFileSync(file, 'utf8')) as LoadWorkerConfig;
  const measure = windowRunner(config);
  const levels: LoadLevel[] = [];
  let offset = 0;
  for (const connections of config.concurrency) {
    if (config.warmupS > 0) {
      process.stderr.write(`    c=${connections}: warm-up ${config.warmupS}s\n`);
      await measure(connections, config.warmupS, offset);
    }
    process.stderr.write(`    c=${connections}: measuring ${config.durationS}s\n`);
    const origin = config.metricsOrigin ?? (protocolOf(config.url) === 'grpc' ? null : new URL(config.url).origin);
    const stagesBefore = origin ? await scrapeStages(origin, config.apiKey) : null;
    const sampler = sampleGpu(config.gpuDevice);
    const cpuBefore = config.serverPid ? processTreeCpuS(config.serverPid) : null;
    const w = await measure(connections, config.durationS, offset);
    const serverCpuS = cpuBefore === null ? null : processTreeCpuS(config.serverPid!) - cpuBefore;
    const gpu = await sampler.stop();
    const figures = windowFigures(stagesBefore, origin ? await scrapeStages(origin, config.apiKey) : null, w.durationS, w.responses);
    offset += 7;
    const latencies = w.latencies.sort((a, b) => a - b);
    const level: LoadLevel = {
      concurrency: connections,
      durationS: w.durationS,
      responses: w.responses,
      ok2xx: latencies.length,
      rps: latencies.length / w.durationS,
      p50Ms: percentile(latencies, 50),
      p90Ms: percentile(latencies, 90),
      p99Ms: percentile(latencies, 99),
      maxMs: latencies.length ? latencies[latencies.length - 1]! : NaN,
      non2xx: refusals(w),
      status429: w.overloaded,
      otherStatus: w.refused,
      errors: w.errors,
      timeouts: w.timeouts,
      gpu,
      ...figures,
      ...(serverCpuS !== null && { serverCpuS }),
    };
    levels.push(level);
    process.stderr.write(
      `    c=${connections}: ${level.rps.toFixed(1)} req/s, p50 ${level.p50Ms.toFixed(1)} ms, p90 ${level.p90Ms.toFixed(1)} ms, p99 ${level.p99Ms.toFixed(1)} ms, ` +
        `non-2xx ${level.non2xx} (429: ${level.status429}), errors ${level.errors}, timeouts ${level.timeouts}\n`,
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
