// gRPC ModelInfer load for bench/main-thread.sh (MT_PROTOCOL=grpc): one photo, a closed loop of
// CONNECTIONS calls in flight on one channel for SECONDS, at most RATE calls a second in all when
// given. Prints what main-thread.sh reads of autocannon's result: requests.total, duration (s),
// non2xx (calls the service answered with another status than OK) and latency.p99 (ms).
//   node dist/bench/grpc-load.js grpc://127.0.0.1:PORT/MODEL KEY PHOTO CONNECTIONS SECONDS [RATE]
import { readFileSync } from 'node:fs';
import { percentile } from './common';
import { grpcSender } from './grpc-client';
import { closedLoopWindow, refusals } from './load-window';

async function main(): Promise<void> {
  const [url, key, photo, connections, seconds, rate] = process.argv.slice(2);
  if (!url || !key || !photo || !connections || !seconds) throw new Error('usage: grpc-load URL KEY PHOTO CONNECTIONS SECONDS [RATE]');
  const send = grpcSender(url, key, [readFileSync(photo)], 120);
  const w = await closedLoopWindow(send, Number(connections), Number(seconds), 0, rate ? Number(rate) : undefined);
  const latencies = w.latencies.sort((a, b) => a - b);
  console.log(JSON.stringify({ requests: { total: w.responses }, duration: w.durationS, non2xx: refusals(w), errors: w.errors + w.timeouts, latency: { p99: Math.round(percentile(latencies, 99)) } }));
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`grpc-load: ${(error as Error).message}\n`);
    process.exit(1);
  },
);
