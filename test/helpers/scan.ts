// Helpers for scan tests: credentials issued by the real CLI, and a polling reader.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from './paths';
import { waitFor } from './wait';

export interface Credential {
  keyId: string;
  secret: string;
}

export function storeEnv(dataDir: string, databaseUrl: string | null): Record<string, string> {
  return databaseUrl ? { CATCOMFORT_DATABASE_URL: databaseUrl, CATCOMFORT_DATA_DIR: dataDir } : { CATCOMFORT_DATA_DIR: dataDir };
}

/** Runs the catcomfort CLI against the same store as the service under test. */
export function cli(env: Record<string, string>, ...args: string[]): string {
  return execFileSync(process.execPath, [path.join(repoRoot, 'dist/src/cli/main.js'), ...args], {
    env: { ...process.env, CATCOMFORT_DATABASE_URL: '', ...env },
    encoding: 'utf8',
  });
}

export function createCredential(env: Record<string, string>, name: string): Credential {
  const out = cli(env, 'credentials', 'create', '--name', name);
  const keyId = /key id: (\S+)/.exec(out)?.[1];
  const secret = /secret: (\S+)/.exec(out)?.[1];
  if (!keyId || !secret) throw new Error(`unexpected CLI output: ${out}`);
  return { keyId, secret };
}

export function scanHeaders(c: Credential): Record<string, string> {
  return { 'api-key': c.keyId, 'api-secret': c.secret };
}

/** GET /scan/{id} as its JSON body. */
export async function getScan(url: string, id: string, c: Credential): Promise<any> {
  const res = await fetch(`${url}/scan/${id}`, { headers: scanHeaders(c) });
  return res.json();
}

/** Polls GET /scan/{id} until the scan is COMPLETED or FAILED (bounded). */
export function waitForScan(url: string, id: string, c: Credential, timeoutMs = 120_000): Promise<any> {
  return waitFor(
    `scan ${id} to finish`,
    async () => {
      const body = await getScan(url, id, c);
      return (body.status === 'COMPLETED' || body.status === 'FAILED') && body;
    },
    { timeoutMs, intervalMs: 100 },
  );
}
