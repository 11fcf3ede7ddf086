// The Python client's venv (clients/python/.venv: grpcio, grpcio-tools from the local pip index, made
// as the bench makes its peers' venvs), and a run of a script in it.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { ensureVenv } from '../../bench/install-peers';
import { repoRoot } from './paths';

const clientDir = path.join(repoRoot, 'clients/python');

/** Runs `script` (relative to the repository) with the client's Python; resolves with its stdout. */
export async function runClientScript(script: string, args: string[], timeoutMs = 300_000): Promise<string> {
  const python = await ensureVenv('python3', path.join(clientDir, '.venv'), path.join(clientDir, 'requirements.txt'));
  return new Promise((resolve, reject) => {
    execFile(python, [path.join(repoRoot, script), ...args], { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${script} failed: ${error.message}\n${stderr}`));
      else resolve(stdout);
    });
  });
}
