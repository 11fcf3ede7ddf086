// Finds a program the proxy tests drive (nginx, ab): its usual Debian path first, then PATH; when it
// is missing, the reason the tests that need it are skipped, with the package that brings it.
import fs from 'node:fs';
import path from 'node:path';

export type Found = { path: string } | { path: null; reason: string };

export function findExecutable(name: string, debianPath: string, debianPackage: string): Found {
  const candidates = [debianPath, ...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean).map((d) => path.join(d, name))];
  const found = candidates.find((file) => {
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
  if (found === undefined) return { path: null, reason: `no ${name} at ${debianPath} or on PATH; install it (Debian: apt-get install -y ${debianPackage}) to run the proxy tests` };
  return { path: found };
}
