// Load run against a URL, from a second process (dist/bench/load-worker.js), with every fixture photo
// (cat and no-cat) rotated across requests, at each concurrency level. The URL names the protocol
// (bench/protocols.ts): .../v2/predict, .../v2/models/<model>/infer (OIP REST, binary tensor data),
// grpc://HOST:PORT/<model> (OIP gRPC ModelInfer).
// Alone, against a server you started: `node dist/bench/load.js http://127.0.0.1:8080/v2/predict KEY`
// (BENCH_DURATION_S, BENCH_WARMUP_S, BENCH_CONCURRENCY apply). Only loopback URLs are accepted.
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../src/config';
import { benchOptions, fixturePhotos, log, spawnTracked, stopChild, tmpDir, installCleanup } from './common';
import type { LoadLevel, LoadWorkerConfig } from './load-worker';

export type { LoadLevel } from './load-worker';

export interface LoadOptions {
  url: string;
  apiKey: string;
  concurrency: number[];
  durationS: number;
  warmupS: number;
  timeoutS?: number;
  /** Photos rotated across requests; default every fixture photo. */
  photoPaths?: string[];
  /** Where the service's /metrics is, for the stage figures (default: the url's origin over HTTP; none for gRPC). */
  metricsOrigin?: string;
  /** The server's process: the CPU its process tree uses in each measured window is reported (LoadLevel.serverCpuS). */
  serverPid?: number;
}

function assertLoopback(url: string): void {
  const host = new URL(url).hostname;
  if (!(host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host))) {
    throw new Error(`load runs only against loopback addresses, not ${host}`);
  }
}

export async function runLoad(options: LoadOptions): Promise<LoadLevel[]> {
  assertLoopback(options.url);
  mkdirSync(tmpDir, { recursive: true });
  const config: LoadWorkerConfig = {
    url: options.url,
    apiKey: options.apiKey,
    photoPaths: options.photoPaths ?? fixturePhotos().map((p) => p.path),
    concurrency: options.concurrency,
    durationS: options.durationS,
    warmupS: options.warmupS,
    timeoutS: options.timeoutS ?? 120,
    gpuDevice: loadConfig().deviceId,
    ...(options.metricsOrigin ? { metricsOrigin: options.metricsOrigin } : {}),
    ...(options.serverPid ? { serverPid: options.serverPid } : {}),
  };
  const configFile = path.join(tmpDir, `load-${process.pid}-${Date.now()}.json`);
  writeFileSync(configFile, JSON.stringify(config));
  const child = spawnTracked(process.execPath, [path.join(__dirname, 'load-worker.js'), configFile], { stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  // Bounded: every level's warm-up + measurement + the per-request timeout, plus slack.
  const limitMs = (options.concurrency.length * (options.durationS + options.warmupS) + config.timeoutS + 60) * 1000;
  const code = await new Promise<number | null>((resolve, reject) => {
    const timer = setTimeout(() => {
      void stopChild(child);
      reject(new Error(`load worker ran past ${limitMs / 1000}s`));
    }, limitMs);
    child.once('error', reject);
    child.once('exit', (c) => {
      clearTimeout(timer);
      resolve(c);
    });
  });
  if (code !== 0) throw new Error(`load worker exited with ${code}`);
  const line = stdout.trim().split('\n').pop() ?? '';
  return (JSON.parse(line) as { levels: LoadLevel[] }).levels;
}

if (require.main === module) {
  installCleanup();
  const [url, apiKey] = process.argv.slice(2);
  if (!url || !apiKey) {
    process.stderr.write('usage: node dist/bench/load.js <url> <api-key>   (url: http://127.0.0.1:PORT/v2/predict, http://127.0.0.1:PORT/v2/models/MODEL/infer or grpc://127.0.0.1:PORT/MODEL)\n');
    process.exit(2);
  }
  const o = benchOptions();
  log(`load ${url}: concurrency ${o.concurrency.join(',')}, ${o.durationS}s each after ${o.warmupS}s warm-up`);
  runLoad({ url, apiKey, concurrency: o.concurrency, durationS: o.durationS, warmupS: o.warmupS }).then(
    (levels) => {
      process.stdout.write(`${JSON.stringify(levels, null, 2)}\n`);
      process.exit(0);
    },
    (error: unknown) => {
      process.stderr.write(`load failed: ${(error as Error)?.message ?? String(error)}\n`);
      process.exit(1);
    },
  );
}
