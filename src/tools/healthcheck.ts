// Container health check (Dockerfile HEALTHCHECK): GET /readyz of the service in this container,
// on CATCOMFORT_PORT (default 8080) at CATCOMFORT_HOST, or 127.0.0.1 when that is a wildcard
// address. Exit 0 when it answers 200 (ready), 1 otherwise (not ready, draining, not listening,
// no answer within 5 s); one line on stderr says why. No curl or wget needed in the image.
import http from 'node:http';
import { listenAddressFrom } from '../config';

const TIMEOUT_MS = 5000;

function target(env: Record<string, string | undefined>): { host: string; port: number } {
  const { host, port } = listenAddressFrom(env);
  if (port === 0) throw new Error(`CATCOMFORT_PORT must be a fixed port from 1 to 65535 for the health check, got "${env.CATCOMFORT_PORT}"`);
  return { host: host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host, port };
}

function check(): Promise<string | null> {
  const { host, port } = target(process.env);
  return new Promise((resolve) => {
    const req = http.get({ host, port, path: '/readyz', timeout: TIMEOUT_MS }, (res) => {
      res.resume();
      resolve(res.statusCode === 200 ? null : `GET /readyz answered ${res.statusCode}`);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)));
    req.on('error', (error) => resolve(`GET http://${host}:${port}/readyz failed: ${error.message}`));
  });
}

if (require.main === module) {
  check().then(
    (problem) => {
      if (problem) process.stderr.write(`not ready: ${problem}\n`);
      process.exitCode = problem ? 1 : 0;
    },
    (error: unknown) => {
      process.stderr.write(`health check: ${(error as Error).message}\n`);
      process.exitCode = 1;
    },
  );
}
