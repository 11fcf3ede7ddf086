// Makes the provider probe fail on purpose, from outside the service: a module preloaded with
// `NODE_OPTIONS=--require <this file, compiled>` (probeFaultEnv below). The service passes its
// environment on to the probe child (src/packs/probe/provider-probe.ts), so this module is loaded
// in the service and in every probe child; it acts only in the probe child
// (dist/src/packs/probe/child.js) and only with PROBE_FAULT set (a test-only variable, outside the
// CATCOMFORT_ names the service checks). Right after the child announces its step "building the
// sessions" on stdout, PROBE_FAULT makes it:
//   segv    crash with SIGSEGV
//   exit    exit with code 70
//   error   fail with an error (it leaves the child's report, so the child reports `failed` with it)
//   pinned  fail with an error, but only while pinned memory is on (argv[2], its runtime settings)
//   hang    give no answer, without spending CPU, until the service's probe timeout kills it
import path from 'node:path';

const FAULTS = ['segv', 'exit', 'error', 'pinned', 'hang'] as const;
type Fault = (typeof FAULTS)[number];

/** The environment that makes every provider probe of a service started with it fail with `fault`. */
export function probeFaultEnv(fault: Fault): Record<string, string> {
  const preload = `--require ${JSON.stringify(__filename)}`;
  return { NODE_OPTIONS: [process.env.NODE_OPTIONS, preload].filter(Boolean).join(' '), PROBE_FAULT: fault };
}

function inject(fault: Fault): void {
  switch (fault) {
    case 'segv':
      process.kill(process.pid, 'SIGSEGV');
      break;
    case 'exit':
      process.exit(70);
      break;
    case 'error':
      throw new Error('fault injected by PROBE_FAULT');
    case 'pinned':
      if ((JSON.parse(process.argv[2] ?? '{}') as { pinnedMemory?: boolean }).pinnedMemory) {
        throw new Error('fault injected by PROBE_FAULT with pinned memory');
      }
      break;
    case 'hang':
      // Blocks this (only) thread; the service kills the child at its probe timeout.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10 * 60_000);
      break;
  }
}

function install(fault: string): void {
  if (!(FAULTS as readonly string[]).includes(fault)) throw new Error(`PROBE_FAULT must be one of ${FAULTS.join(', ')}, got "${fault}"`);
  const write = process.stdout.write.bind(process.stdout) as (...args: unknown[]) => boolean;
  let injected = false;
  process.stdout.write = ((...args: unknown[]) => {
    const written = write(...args);
    if (!injected && typeof args[0] === 'string' && args[0].includes('"step":"building the sessions"')) {
      injected = true;
      inject(fault as Fault);
    }
    return written;
  }) as typeof process.stdout.write;
}

const fault = process.env.PROBE_FAULT;
if (fault !== undefined && process.argv[1]?.endsWith(path.join('packs', 'probe', 'child.js'))) install(fault);
