// Helpers for scan tests: credentials issued by the real CLI, and a polling reader.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { repoRoot } from './paths';

export interface Credential {
  keyId: string;
  secret: string;
}

export function storeEnv(dataDir: string, databaseUrl: string | null): Record<string, string> {
  return databaseUrl ? { CATCOMFORT_DATABASE_URL: databaseUrl, CATCOMFORT_DATA_DIR: dataDir } : { CATCOMFORT_DATA_DIR: dataDir };
}

/** Runs the credentials CLI against the same store as the service under test. */
export function cli(env: Record<string, string>, ...args: string[]): string {
  return execFileSync(process.execPath, [path.join(repoRoot, 'dist/src/cli/credentials.js'), ...args], {
    env: { ...process.env, CATCOMFORT_DATABASE_URL: '', ...env },
    encoding: 'utf8',
  });
}

export function createCredential(env: Record<string, string>, name: string): Credential {
  const out = cli(env, 'create-scan-credential', '--name', name);
  const keyId = /key id: (\S+)/.exec(out)?.[1];
  const secret = /secret: (\S+)/.exec(out)?.[1];
  if (!keyId || !secret) throw new Error(`unexpected CLI output: ${out}`);
  return { keyId, secret };
}

export function scanHeaders(c: Credential): Record<string, string> {
  return { 'api-key': c.keyId, 'api-secret': c.secret };
}

/** Polls GET /scan/{id} until the scan is COMPLETED or FAILED (bounded). */
export async function waitForScan(url: string, id: string, c: Credential, timeoutMs = 30_000): Promise<any> {
  const started = Date.now();
  for (;;) {
    const res = await fetch(`${url}/scan/${id}`, { headers: scanHeaders(c) });
    const body = (await res.json()) as any;
    if (body.status === 'COMPLETED' || body.status === 'FAILED') return body;
    if (Date.now() - started > timeoutMs) throw new Error(`scan ${id} still ${body.status} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
