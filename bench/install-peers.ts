// First use of a peer installs it: the Python venv bench/.venv with the FastAPI peer's requirements
// (and Ray Serve's on top), or the Fastify peer's node_modules with npm ci. A stamp next to what was
// installed holds the sha256 of its requirements or lock file; a changed file installs again.
// ensureVenv also makes the OIP Python client's venv for the tests (test/helpers/python-client.ts).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { sha256 } from '../src/hash';
import { benchDir, log, repoRoot, runCommand } from './common';

/** The Python peers' venv (bench/.venv) with the requirements of `peer` installed (the FastAPI peer's first: Ray Serve's run the same pipeline). */
export async function ensurePythonPeer(options: { python: string }, peer: 'fastapi' | 'ray-serve'): Promise<string> {
  if (peer !== 'fastapi') await ensurePythonPeer(options, 'fastapi');
  return ensureVenv(options.python, path.join(benchDir, '.venv'), path.join(benchDir, `peers/${peer}/requirements.txt`));
}

/**
 * A venv with `requirements` installed (also the OIP client's, for its tests): made on first use,
 * installed again when the file changes. The stamp, named after the requirements' folder, holds its sha256.
 */
export async function ensureVenv(systemPython: string, venv: string, requirements: string): Promise<string> {
  const python = path.join(venv, 'bin', 'python');
  const stamp = path.join(venv, `.requirements.${path.basename(path.dirname(requirements))}.sha256`);
  const want = sha256(readFileSync(requirements));
  if (existsSync(python) && existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === want) return python;
  log(`${existsSync(python) ? 'in' : 'creating'} ${path.relative(repoRoot, venv)}: installing ${path.relative(repoRoot, requirements)} (first use)`);
  if (!existsSync(python)) await runCommand(systemPython, ['-m', 'venv', venv], { label: 'python3 -m venv' });
  // PIP_RETRIES=0: with only a local wheel store reachable, pip must not spend minutes retrying
  // an unreachable default index before it looks at the others.
  await runCommand(python, ['-m', 'pip', 'install', '--disable-pip-version-check', '-q', '-r', requirements], {
    label: 'pip install',
    env: { ...process.env, PIP_RETRIES: process.env.PIP_RETRIES ?? '0' },
  });
  writeFileSync(stamp, `${want}\n`);
  return python;
}

/** The Fastify peer's node_modules (bench/peers/fastify), installed from its package-lock.json. */
export async function ensureFastifyModules(): Promise<void> {
  const dir = path.join(benchDir, 'peers/fastify');
  const stamp = path.join(dir, 'node_modules/.bench-lock.sha256');
  const want = sha256(readFileSync(path.join(dir, 'package-lock.json')));
  if (existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === want) return;
  log('installing the Fastify peer: npm ci --prefix bench/peers/fastify (first use)');
  // onnxruntime-node's install script would download GPU binaries; the CPU binary ships in the package.
  // npm_* variables come from `npm run bench` and carry the root project's settings (e.g.
  // build-from-source); the peer is its own project, so its npm reads its own configuration.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
  await runCommand('npm', ['ci', '--prefix', dir, '--no-audit', '--no-fund'], {
    label: 'npm ci (fastify peer)',
    env: { ...env, ONNXRUNTIME_NODE_INSTALL: 'skip' },
  });
  writeFileSync(stamp, `${want}\n`);
}
