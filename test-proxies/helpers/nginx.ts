// A real nginx in front of the service for the proxy tests: /usr/sbin/nginx (or nginx on PATH) in
// the foreground as one process (`daemon off; master_process off;`), with a generated config whose
// pid file, logs and temp folders all live in a fresh temp folder, listening on a free 127.0.0.1
// port. Two shapes: 'http10' is a bare proxy_pass (nginx's default: HTTP/1.0 to the upstream,
// Connection: close, no X-Forwarded-For); 'keepalive' is an upstream block with keepalive 16,
// HTTP/1.1 with Connection "" and X-Forwarded-For set from $proxy_add_x_forwarded_for. Both pass
// the live stream's WebSocket upgrade as docs/api-v2.md "Live stream" says. stop()
// waits for the process to exit and removes the folder; a test process that exits or gets SIGINT
// or SIGTERM first kills it too.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { findExecutable } from './executable';
import path from 'node:path';
import { freePort } from '../../bench/common';
import { waitFor } from '../../test/helpers/wait';
import { cleanupOnExit } from '../../test/helpers/cleanup-on-exit';

export type NginxVariant = 'http10' | 'keepalive';

export interface TestNginx {
  url: string;
  port: number;
  /** nginx's error log and stderr so far, for failure messages. */
  log(): string;
  /** SIGQUIT (graceful), SIGKILL if it is still running after 10 s; waits for the exit, removes the folder. */
  stop(): Promise<void>;
}

export type NginxProbe = { nginx: string } | { nginx: null; reason: string };

/** The nginx binary, or why the proxy tests are skipped. */
export function findNginx(): NginxProbe {
  const found = findExecutable('nginx', '/usr/sbin/nginx', 'nginx-light');
  return found.path === null ? { nginx: null, reason: found.reason } : { nginx: found.path };
}

/** Temp-path directives for the modules this build has (a module left out has no directive). */
function tempPaths(binary: string, dir: string): string {
  const built = spawnSync(binary, ['-V'], { encoding: 'utf8' });
  const flags = `${built.stdout ?? ''}${built.stderr ?? ''}`;
  const lines = [`client_body_temp_path ${dir}/client_body;`, `proxy_temp_path ${dir}/proxy;`];
  for (const module of ['fastcgi', 'uwsgi', 'scgi']) {
    if (!flags.includes(`--without-http_${module}_module`)) lines.push(`${module}_temp_path ${dir}/${module};`);
  }
  return lines.join('\n    ');
}

export function nginxConfig(variant: NginxVariant, dir: string, listenPort: number, upstreamPort: number, temp: string): string {
  const upstream =
    variant === 'keepalive'
      ? `upstream catcomfort {
        server 127.0.0.1:${upstreamPort};
        keepalive 16;
    }
`
      : '';
  const location =
    variant === 'keepalive'
      ? `proxy_pass http://catcomfort;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;`
      : `proxy_pass http://127.0.0.1:${upstreamPort};`;
  return `daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
lock_file ${dir}/nginx.lock;
error_log ${dir}/error.log error;

events {
    worker_connections 1024;
}

http {
    access_log ${dir}/access.log;
    ${temp}
    client_max_body_size 20m;
    ${upstream}
    server {
        listen 127.0.0.1:${listenPort};
        location / {
            ${location}
        }
        location /v2/stream {
            proxy_pass ${variant === 'keepalive' ? 'http://catcomfort' : `http://127.0.0.1:${upstreamPort}`};
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection "upgrade";
            proxy_read_timeout 120s;
        }
    }
}
`;
}

async function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Starts nginx proxying to 127.0.0.1:upstreamPort; resolves once its port accepts connections. */
export async function startNginx(binary: string, variant: NginxVariant, upstreamPort: number): Promise<TestNginx> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `cc-nginx-${variant}-`));
  const temp = tempPaths(binary, dir);
  let lastError = '';
  // A free port can be taken by someone else before nginx binds it: a few tries, like the PostgreSQL helper.
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const conf = path.join(dir, 'nginx.conf');
    fs.writeFileSync(conf, nginxConfig(variant, dir, port, upstreamPort, temp));
    // -e: the log nginx writes before it has read the config; -p: relative paths (none) resolve in the folder.
    const child = spawn(binary, ['-p', `${dir}/`, '-e', path.join(dir, 'error.log'), '-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
    const log = () => {
      let errorLog = '';
      try {
        errorLog = fs.readFileSync(path.join(dir, 'error.log'), 'utf8');
      } catch {
        // not written yet
      }
      return `${errorLog}${output}`;
    };
    const running = () => child.exitCode === null && child.signalCode === null;
    let failure: Error | null = null;
    child.once('error', (error) => (failure = error));
    try {
      await waitFor(
        `nginx (${variant}) to accept connections on 127.0.0.1:${port}`,
        async () => {
          if (failure) throw failure;
          if (!running()) throw new Error(`nginx exited with ${child.exitCode ?? child.signalCode}:\n${log()}`);
          return portOpen(port);
        },
        { timeoutMs: 15_000 },
      );
    } catch (error) {
      await kill(child, closed);
      lastError = (error as Error).message;
      if (/Address already in use/.test(lastError)) continue;
      fs.rmSync(dir, { recursive: true, force: true });
      throw new Error(`nginx did not start: ${lastError}\nconfig:\n${nginxConfig(variant, dir, port, upstreamPort, temp)}`);
    }
    return handle(child, closed, dir, port, log);
  }
  fs.rmSync(dir, { recursive: true, force: true });
  throw new Error(`nginx did not start after 3 ports: ${lastError}`);
}

function handle(child: ChildProcess, closed: Promise<void>, dir: string, port: number, log: () => string): TestNginx {
  // A test process that exits or is interrupted without stop() still takes nginx with it.
  const killSync = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const onExit = cleanupOnExit(killSync);
  let stopped: Promise<void> | null = null;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    log,
    stop() {
      stopped ??= (async () => {
        await kill(child, closed);
        fs.rmSync(dir, { recursive: true, force: true });
        onExit.unregister();
      })();
      return stopped;
    },
  };
}

/** SIGQUIT, then SIGKILL after 10 s; resolves when the process has exited and its pipes are closed (or 15 s have passed). */
async function kill(child: ChildProcess, closed: Promise<void>): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGQUIT');
  const timers: NodeJS.Timeout[] = [];
  await Promise.race([
    closed,
    new Promise<void>((resolve) => {
      timers.push(setTimeout(() => child.kill('SIGKILL'), 10_000));
      timers.push(setTimeout(resolve, 15_000));
    }),
  ]);
  for (const timer of timers) clearTimeout(timer);
}
