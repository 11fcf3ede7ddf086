// The Python client's venv (clients/python/.venv) with its requirements (grpcio, grpcio-tools) from
// the local pip index, made on first use and again when requirements.txt changes; and a run of a script in it.
import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from './paths';

const clientDir = path.join(repoRoot, 'clients/python');

export function clientPython(): string {
  const venv = path.join(clientDir, '.venv');
  const python = path.join(venv, 'bin/python');
  const requirements = path.join(clientDir, 'requirements.txt');
  const stamp = path.join(venv, '.requirements.sha256');
  const want = createHash('sha256').update(readFileSync(requirements)).digest('hex');
  if (existsSync(python) && existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === want) return python;
  if (!existsSync(python)) execFileSync('python3', ['-m', 'venv', venv], { stdio: 'inherit' });
  // PIP_RETRIES=0: with only the local index reachable, pip must not retry an unreachable default one.
  execFileSync(python, ['-m', 'pip', 'install', '--disable-pip-version-check', '-q', '-r', requirements], {
    stdio: 'inherit',
    env: { ...process.env, PIP_RETRIES: process.env.PIP_RETRIES ?? '0' },
  });
  writeFileSync(stamp, `${want}\n`);
  return python;
}

/** Runs `script` (relative to the repository) with the client's Python; resolves with its stdout. */
export function runClientScript(script: string, args: string[], timeoutMs = 300_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(clientPython(), [path.join(repoRoot, script), ...args], { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${script} failed: ${error.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}
