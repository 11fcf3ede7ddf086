// nginx as a fleet's load balancer, the way an endpoints controller drives one: an upstream of the
// replicas' ports, rewritten and reloaded (SIGHUP to the master) as replicas leave and come back.
// Each config answers its own generation at /nginx-generation, so a reload is awaited on observable
// state. To the replicas it speaks nginx's default HTTP/1.0 without keep-alive. A 503 to an
// idempotent request (a draining replica's /readyz) is tried on the next replica; a connection
// refused is too only with `retryRefused` (nginx's default; kube-proxy does not retry, so without it
// a replica that stops listening before it leaves the upstream shows as errors). The access log
// names each answer's upstream.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../bench/common';
import { cleanupOnExit } from '../../test/helpers/cleanup-on-exit';
import { waitFor } from '../../test/helpers/wait';

export interface FleetNginx {
  url: string;
  /** Proxies to these ports from now on (returns once the new config answers). */
  setUpstreams(ports: number[]): Promise<void>;
  /** Whether a refused connection is tried on the next replica, from the next setUpstreams on. */
  retryRefused: boolean;
  /** Access log lines: `status upstream_addr upstream_status method uri`. */
  accessLines(): string[];
  log(): string;
  stop(): Promise<void>;
}

function config(dir: string, port: number, upstreams: number[], generation: number, retryRefused: boolean): string {
  const built = spawnSync('/usr/sbin/nginx', ['-V'], { encoding: 'utf8' });
  const flags = `${built.stdout ?? ''}${built.stderr ?? ''}`;
  const temps = ['client_body', 'proxy', ...['fastcgi', 'uwsgi', 'scgi'].filter((m) => !flags.includes(`--without-http_${m}_module`))];
  // As root the master starts its workers as `nobody`, who could not write the temp folders of this one.
  const user = process.getuid?.() === 0 ? 'user root;\n' : '';
  return `${user}daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log notice;
events { worker_connections 4096; }
http {
    log_format fleet '$status $upstream_addr $upstream_status $request_method $uri';
    access_log ${dir}/access.log fleet;
    ${temps.map((t) => `${t}_temp_path ${dir}/${t};`).join('\n    ')}
    client_max_body_size 20m;
    upstream fleet {
        ${upstreams.map((p) => `server 127.0.0.1:${p} max_fails=0;`).join('\n        ')}
    }
    server {
        listen 127.0.0.1:${port};
        location = /nginx-generation { return 200 "${generation}"; }
        location / {
            proxy_pass http://fleet;
            proxy_next_upstream ${retryRefused ? 'error timeout http_503' : 'http_503'};
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
        }
    }
}
`;
}

export async function startFleetNginx(upstreams: number[], retryRefused: boolean): Promise<FleetNginx> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cc-fleet-nginx-'));
  const port = await freePort();
  const conf = path.join(dir, 'nginx.conf');
  let generation = 1;
  fs.writeFileSync(conf, config(dir, port, upstreams, generation, retryRefused));
  const child = spawn('/usr/sbin/nginx', ['-p', `${dir}/`, '-e', path.join(dir, 'error.log'), '-c', conf], { stdio: 'ignore' });
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const onExit = cleanupOnExit(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const log = () => (fs.existsSync(path.join(dir, 'error.log')) ? fs.readFileSync(path.join(dir, 'error.log'), 'utf8') : '');
  const answers = async (wanted: number) => {
    if (child.exitCode !== null) throw new Error(`nginx exited:\n${log()}`);
    const response = await fetch(`http://127.0.0.1:${port}/nginx-generation`).catch(() => null);
    return response !== null && (await response.text()) === String(wanted);
  };
  await waitFor('nginx to answer', () => answers(generation), { timeoutMs: 15_000 });
  const handle: FleetNginx = {
    url: `http://127.0.0.1:${port}`,
    retryRefused,
    async setUpstreams(ports) {
      generation += 1;
      fs.writeFileSync(conf, config(dir, port, ports, generation, handle.retryRefused));
      child.kill('SIGHUP');
      const wanted = generation;
      await waitFor(`nginx config ${wanted}`, () => answers(wanted), { timeoutMs: 15_000 });
    },
    accessLines: () => fs.readFileSync(path.join(dir, 'access.log'), 'utf8').split('\n').filter((l) => l !== ''),
    log,
    async stop() {
      if (child.exitCode === null) child.kill('SIGQUIT');
      await closed;
      onExit.unregister();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  return handle;
}
