// Starts the real service (`node dist/src/main.js`) on 127.0.0.1 with an ephemeral port
// and a known key, reads the port from its "listening" log line, waits until GET /readyz answers
// 200 (every pack warmed up) and its start-up lines have come (the `ready` line, logged last, may
// reach this process after /readyz's answer), and stops it afterwards. stdout and stderr
// are separate pipes, so a line on one may arrive after a later line on the other: output() is
// complete only once stop() has returned.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from './paths';
import { waitFor } from './wait';

export const TEST_KEY = 'test-key-0123456789abcdef';

export interface TestServer {
  url: string;
  port: number;
  child: ChildProcess;
  output: () => string;
  /** SIGTERM (unless it has exited), then waits until it has exited and its output is read to the end. */
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Program that starts the service; default `node dist/src/main.js` of this checkout. */
  command?: string;
  /** false: the service sees only the settings above and `env`, nothing of this process's environment. */
  inheritEnv?: boolean;
  cwd?: string;
  /** false: return as soon as the port is open, without waiting for readiness. */
  waitReady?: boolean;
}

export async function startServer(env: Record<string, string> = {}, options: StartOptions = {}): Promise<TestServer> {
  const [command, args] = options.command ? [options.command, []] : [process.execPath, [path.join(repoRoot, 'dist/src/main.js')]];
  const child = spawn(command, args, {
    cwd: options.cwd ?? repoRoot,
    env: {
      ...(options.inheritEnv === false ? {} : process.env),
      CATCOMFORT_HOST: '127.0.0.1',
      CATCOMFORT_PORT: '0',
      CATCOMFORT_API_KEYS: TEST_KEY,
      // Tests stop their servers with SIGTERM: no load balancer to wait for (a test sets its own delay).
      CATCOMFORT_DRAIN_DELAY_MS: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start:\n${output}`)), 60_000);
    // Looked for until found, then no more: scanning the whole output on every chunk of a busy
    // service's access log slowed this process enough to fill the pipe, and the service blocks on
    // a full pipe (stdout to a pipe is synchronous on Linux).
    const onData = () => {
      const found = listeningPort(output);
      if (found !== null) {
        child.stdout!.off('data', onData);
        clearTimeout(timer);
        resolve(found);
      }
    };
    child.stdout!.on('data', onData);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${output}`));
    });
  });
  if (options.waitReady !== false) {
    try {
      await waitFor(
        'GET /readyz to answer 200',
        async () => {
          if (exited()) throw new Error(`server exited with ${child.exitCode ?? child.signalCode} before it was ready:\n${output}`);
          const response = await fetch(`http://127.0.0.1:${port}/readyz`);
          await response.arrayBuffer();
          return response.status === 200;
        },
        { timeoutMs: 120_000 },
      );
      const level = env.CATCOMFORT_LOG_LEVEL ?? (options.inheritEnv === false ? undefined : process.env.CATCOMFORT_LOG_LEVEL);
      if (level === undefined || level === 'info' || level === 'debug') await waitFor('the "ready" line', () => output.includes('"msg":"ready"') || null, { timeoutMs: 10_000 });
    } catch (error) {
      child.kill('SIGKILL');
      throw error;
    }
  }
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    child,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await closed;
    },
  };
}

/** The port of the "listening" log line, once it has arrived whole. */
function listeningPort(output: string): number | null {
  for (const line of output.split('\n')) {
    if (!line.includes('"msg":"listening"')) continue;
    try {
      return (JSON.parse(line) as { port: number }).port;
    } catch {
      return null; // the rest of the line is still on its way
    }
  }
  return null;
}
