// The service as users meet it, for `catcomfort gpu-check`: started as a child process on a free
// port of 127.0.0.1 (its own probe, load and warm-up), timed until /readyz answers 200, loaded
// by closed-loop keep-alive clients posting /v2/predict, then stopped with SIGTERM. The scan
// backlog drain (gpu-check/scan-drain.ts) starts and stops it the same way.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { closedLoop, type LoopResult } from './closed-loop';
import { scrapeStages, windowFigures, type WindowFigures } from './stage-scrape';

/** One load level; `failed` counts answers other than 200 and requests that failed; the service's stages and loop from /metrics. */
export interface HttpLevel extends LoopResult, Partial<WindowFigures> {
  clients: number;
}

interface Service {
  port: number;
  key: string;
  child: ChildProcess;
  /** From the spawn to the first 200 of /readyz (polled every READY_POLL_MS). */
  readyMs: number;
}

const READY_POLL_MS = 100;

const main = path.resolve(__dirname, '../main.js');

function request(port: number, method: string, route: string, agent: http.Agent, headers: Record<string, string> = {}, body?: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: route, agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Starts the service with `env` on top of this process's environment; resolves once it is ready. */
export async function startService(env: Record<string, string>, timeoutMs: number): Promise<Service> {
  const key = randomBytes(16).toString('hex');
  const spawned = performance.now();
  const child = spawn(process.execPath, [main], {
    env: { ...process.env, ...env, CATCOMFORT_HOST: '127.0.0.1', CATCOMFORT_PORT: '0', CATCOMFORT_API_KEYS: key, CATCOMFORT_LOG_LEVEL: 'info', CATCOMFORT_DRAIN_DELAY_MS: '0' },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let pending = '';
    const timer = setTimeout(() => reject(new Error('the service did not listen in time')), timeoutMs);
    child.once('exit', (code) => reject(new Error(`the service exited with code ${code} before listening`)));
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (pending + chunk).split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        const m = /"port":(\d+).*"msg":"listening"/.exec(line);
        if (m) {
          clearTimeout(timer);
          resolve(Number(m[1]));
        }
      }
    });
  });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const deadline = performance.now() + timeoutMs;
  while ((await request(port, 'GET', '/readyz', agent).catch(() => 0)) !== 200) {
    if (performance.now() > deadline || child.exitCode !== null) throw new Error('the service did not become ready in time');
    await new Promise((resolve) => setTimeout(resolve, READY_POLL_MS));
  }
  agent.destroy();
  return { port, key, child, readyMs: performance.now() - spawned };
}

export async function stopService(service: Service): Promise<void> {
  if (service.child.exitCode !== null) return;
  const exited = new Promise((resolve) => service.child.once('exit', resolve));
  service.child.kill('SIGTERM');
  await exited;
}

/** Load levels against a service started with `env`: each level for `seconds`, photos rotated; and its time to ready. */
export async function httpLoad(
  env: Record<string, string>,
  images: Buffer[],
  levels: number[],
  seconds: number,
  timeoutMs: number,
): Promise<{ readyMs: number; levels: HttpLevel[] }> {
  const service = await startService(env, timeoutMs);
  const bodies = images.map((image) => JSON.stringify({ image: image.toString('base64') }));
  const headers = { 'api-key': service.key, 'content-type': 'application/json' };
  const out: HttpLevel[] = [];
  try {
    for (const clients of levels) {
      const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
      const origin = `http://127.0.0.1:${service.port}`;
      const before = await scrapeStages(origin, service.key);
      const loop = await closedLoop(clients, seconds, async (n) => (await request(service.port, 'POST', '/v2/predict', agent, headers, bodies[n % bodies.length])) === 200);
      agent.destroy();
      out.push({ clients, ...loop, ...windowFigures(before, await scrapeStages(origin, service.key), loop.seconds, loop.requests) });
    }
  } finally {
    await stopService(service);
  }
  return { readyMs: service.readyMs, levels: out };
}
