// The private folder of uWS's unix socket (behind the HTTP front): mode 0700, removed at shutdown.
// A process killed with SIGKILL cannot remove its folder; the next start removes such leftovers
// (older than a minute, and nothing listening on their socket).
import { chmodSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const PREFIX = 'catcomfort-http-';
export const SOCKET_NAME = 'uws.sock';

/** Where the folders go: the temp folder, unless its path is too long for a socket path (108 bytes). */
function baseDir(): string {
  return os.tmpdir().length <= 80 ? os.tmpdir() : '/tmp';
}

function nobodyListens(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = net.connect(socketPath);
    probe.once('connect', () => {
      probe.destroy();
      resolve(false);
    });
    probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED' || error.code === 'ENOENT'));
  });
}

async function sweepLeftovers(base: string): Promise<void> {
  let names: string[];
  try {
    names = readdirSync(base).filter((name) => name.startsWith(PREFIX));
  } catch {
    return;
  }
  const uid = process.getuid?.();
  await Promise.all(
    names.map(async (name) => {
      const dir = path.join(base, name);
      try {
        const info = statSync(dir);
        if (!info.isDirectory() || (uid !== undefined && info.uid !== uid) || Date.now() - info.mtimeMs < 60_000) return;
        if (await nobodyListens(path.join(dir, SOCKET_NAME))) rmSync(dir, { recursive: true, force: true });
      } catch {
        // gone meanwhile, or not ours to judge
      }
    }),
  );
}

/** Creates a fresh private folder for the socket (after removing leftovers of killed processes). */
export async function createSocketDir(): Promise<string> {
  const base = baseDir();
  await sweepLeftovers(base);
  const dir = mkdtempSync(path.join(base, PREFIX));
  chmodSync(dir, 0o700);
  return dir;
}
