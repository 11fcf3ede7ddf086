// A burst beside a busy neighbour, at several loop priorities side by side: for each round and each
// CATCOMFORT_LOOP_NICE value (order alternating), our service is started as deployed, a busy loop
// at the default priority takes one core, 10,000 connections each send one POST /v2/predict at once
// (bench/burst.ts), and a health checker asks GET /readyz over HTTP/1.0 on a new connection every
// 100 ms meanwhile, as a load balancer does. One JSON line per burst, then the medians by value.
//   bash -c 'ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"; BURST_NICE=0,5 BURST_ROUNDS=4 node dist/bench/burst-neighbour.js'
import { execFile, spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import type { BurstResult } from './burst';
import { installCleanup, percentile, sleep, stopChild } from './common';
import { processTreeCpuS } from './process-cpu';
import { API_KEY, startServer, stopServer } from './servers';

const niceValues = (process.env.BURST_NICE ?? '0,5').split(',').map(Number);
const rounds = Number(process.env.BURST_ROUNDS ?? 4);
const connections = Number(process.env.BURST_CONNECTIONS ?? 10_000);

/** One GET /readyz over HTTP/1.0 on a new connection: milliseconds to the whole answer, or null when none came within 60 s. */
function readyz(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    const timer = setTimeout(() => socket.destroy(), 60_000);
    socket.on('connect', () => socket.write('GET /readyz HTTP/1.0\r\n\r\n'));
    socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(/^HTTP\/1\.[01] 200/.test(text) ? performance.now() - started : null);
    });
  });
}

async function oneBurst(nice: number, image: string): Promise<Record<string, unknown>> {
  const server = await startServer('us', {
    precision: 'int8',
    settings: { CATCOMFORT_LOOP_NICE: String(nice), CATCOMFORT_LOG_LEVEL: 'warn' },
    peerWorkers: 1,
    python: null,
    grpc: false,
    freeNetworks: false,
  });
  const port = Number(new URL(server.url).port);
  try {
    while ((await readyz(port)) === null) await sleep(250);
    const neighbour = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
    try {
      while (processTreeCpuS(neighbour.pid!) < 0.2) await sleep(10); // spinning, past Node's start-up
      let bursting = true;
      const pending: Array<Promise<number | null>> = [];
      const checker = (async () => {
        while (bursting) {
          pending.push(readyz(port));
          await sleep(100);
        }
      })();
      const { stdout } = await promisify(execFile)(process.execPath, [path.join(__dirname, 'burst.js'), server.url, API_KEY, String(connections), image], { encoding: 'utf8', timeout: 300_000 });
      bursting = false;
      await checker;
      const checks = await Promise.all(pending);
      const result = JSON.parse(stdout) as BurstResult;
      const answered = checks.filter((c): c is number => c !== null).sort((a, b) => a - b);
      return {
        nice,
        unanswered: result.unanswered,
        ok: result.statuses['200'] ?? 0,
        seconds: result.seconds,
        readyzChecks: checks.length,
        readyzUnanswered: checks.length - answered.length,
        readyzP50Ms: Math.round(percentile(answered, 50)),
        readyzP99Ms: Math.round(percentile(answered, 99)),
        readyzMaxMs: Math.round(answered[answered.length - 1] ?? NaN),
      };
    } finally {
      await stopChild(neighbour);
    }
  } finally {
    await stopServer(server);
  }
}

async function main(): Promise<void> {
  installCleanup();
  const image = require.resolve('../../test/fixtures/chelsea.webp');
  const rows: Array<Record<string, unknown>> = [];
  for (let r = 0; r < rounds; r++) {
    for (const nice of r % 2 === 0 ? niceValues : [...niceValues].reverse()) {
      const row = await oneBurst(nice, image);
      rows.push(row);
      process.stdout.write(`${JSON.stringify(row)}\n`);
    }
  }
  for (const nice of niceValues) {
    const mine = rows.filter((row) => row.nice === nice);
    const median = (key: string) => percentile(mine.map((row) => row[key] as number).sort((a, b) => a - b), 50);
    const failed = mine.filter((row) => (row.unanswered as number) > 0).length;
    process.stdout.write(
      `${JSON.stringify({ nice, bursts: mine.length, burstsWithUnanswered: failed, medianSeconds: median('seconds'), medianOk: median('ok'), medianReadyzP50Ms: median('readyzP50Ms'), medianReadyzP99Ms: median('readyzP99Ms') })}\n`,
    );
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error)?.stack ?? String(error)}\n`);
  process.exit(1);
});
