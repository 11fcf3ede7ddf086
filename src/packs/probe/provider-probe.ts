// Accelerated execution providers are proven before the service uses them. A GPU provider can
// crash the whole process (a segfault in its library) or hang in its first Runs; so each one is
// tried in a child process (src/packs/probe/child.ts, the service's own loading and warm-up
// code) that builds every loaded pack's sessions on it and runs each session at every batch size
// it will be run at. A crash, an error or a timeout disables that provider with one log line
// naming the cause, and the next one is tried; CPU always remains. CPU alone is never probed.
//
// Providers are proven in order, each together with those already proven (tensorrt, then
// tensorrt + cuda), so the last probe that passed ran exactly the combination the service uses.
// A probe that crashes or fails with pinned staging memory on (native/host_memory.h) is run again
// without it (not one that timed out: that would double the longest wait); when that passes, the
// service runs without pinned memory rather than without the provider. A verdict in which every
// provider passed is remembered (probe-verdicts.ts): a restart with the same key skips the probe.
import { spawn } from 'node:child_process';
import path from 'node:path';
import type { ProviderName, RuntimeConfig } from '../../config';
import { log } from '../../log';
import type { ProviderStatus } from '../../native/addon';
import { probeKey, rememberedVerdict, rememberVerdict, type Verdict } from './verdicts';

/** What the probe child prints on stdout, one JSON object per line (other lines are ignored). */
export type ProbeLine =
  | { probe: 'step'; step: string }
  | { probe: 'done'; providers: ProviderStatus[] }
  | { probe: 'failed'; error: string };

type ProbeOutcome = { ok: true; providers: ProviderStatus[] } | { ok: false; cause: string; stderr: string; timedOut: boolean };

const probeScript = path.join(__dirname, 'child.js');
const STDERR_KEPT = 2000;

function parseLine(line: string): ProbeLine | null {
  if (!line.startsWith('{"probe":')) return null;
  try {
    return JSON.parse(line) as ProbeLine;
  } catch {
    return null;
  }
}

/** Runs one probe child on `config.providers` (on every pack, or only on `packDir`) and says how it ended. */
function probe(config: RuntimeConfig, packDir?: string): Promise<ProbeOutcome> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [probeScript, JSON.stringify(config), ...(packDir ? [packDir] : [])], { stdio: ['ignore', 'pipe', 'pipe'] });
    let step = 'starting';
    let result: ProbeLine | null = null;
    let pending = '';
    let stderr = '';
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, config.providerProbeTimeoutMs);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (pending + chunk).split('\n');
      pending = lines.pop()!;
      for (const line of lines) {
        const parsed = parseLine(line);
        if (parsed?.probe === 'step') step = parsed.step;
        else if (parsed) result = parsed;
      }
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-STDERR_KEPT);
    });
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve({ ok: false, cause: `probe process could not start: ${error.message}`, stderr, timedOut });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const during = ` (at: ${step})`;
      const failed = (cause: string) => resolve({ ok: false, cause: `${cause}${during}`, stderr, timedOut });
      if (timedOut) failed(`probe gave no answer within ${config.providerProbeTimeoutMs} ms`);
      else if (signal) failed(`probe process crashed with ${signal}`);
      else if (result?.probe === 'failed') failed(`probe failed: ${result.error}`);
      else if (code !== 0) failed(`probe process exited with code ${code}`);
      else if (result?.probe === 'done') resolve({ ok: true, providers: result.providers });
      else failed('probe process ended without a result');
    });
  });
}

/**
 * A pack version about to be loaded while serving, probed in a child on the providers in use (the
 * same crash and hang protection as at start): null when it passed, else the cause.
 */
export async function probePack(config: RuntimeConfig, packDir: string): Promise<string | null> {
  const outcome = await probe(config, packDir);
  return outcome.ok ? null : outcome.cause;
}

/**
 * The configured providers that passed their probe, in order, then 'cpu'; and whether pinned
 * memory stays on. With `verdicts` (a file in the data folder, probe-verdicts.ts), a verdict
 * remembered for the same key is used without probing, and a new pass of every provider is kept.
 */
export async function provenProviders(config: RuntimeConfig, verdicts?: string): Promise<Verdict> {
  const accelerated = config.providers.filter((p) => p !== 'cpu');
  if (accelerated.length === 0) return { providers: ['cpu'], pinnedMemory: config.pinnedMemory };
  const key = verdicts === undefined ? null : probeKey(config);
  const remembered = key === null ? null : await rememberedVerdict(verdicts!, key);
  if (remembered) {
    log.info('execution providers proven before (not probed again)', { providers: remembered.providers, pinned_memory: remembered.pinnedMemory, probed_at: remembered.at, verdicts });
    return { providers: remembered.providers, pinnedMemory: remembered.pinnedMemory };
  }
  const verdict = await probeEach(config);
  if (key !== null && accelerated.every((p) => verdict.providers.includes(p))) {
    await rememberVerdict(verdicts!, key, verdict).catch((error: Error) => log.warn('could not remember the probe verdict', { verdicts, error: error.message }));
  }
  return verdict;
}

async function probeEach(config: RuntimeConfig): Promise<Verdict> {
  const proven: ProviderName[] = [];
  let pinnedMemory = config.pinnedMemory;
  for (const provider of config.providers.filter((p) => p !== 'cpu')) {
    const started = performance.now();
    log.info('probing execution provider', { provider, with: proven });
    const providers: ProviderName[] = [...proven, provider, 'cpu'];
    let outcome = await probe({ ...config, providers, pinnedMemory });
    let withoutPinned = false;
    if (!outcome.ok && !outcome.timedOut && pinnedMemory) {
      log.warn('execution provider failed with pinned memory; probing again without it', { provider, cause: outcome.cause });
      outcome = await probe({ ...config, providers, pinnedMemory: false });
      withoutPinned = true;
    }
    if (!outcome.ok) {
      log.warn('execution provider disabled', { provider, cause: outcome.cause, ...(outcome.stderr ? { stderr_tail: outcome.stderr } : {}) });
      continue;
    }
    const status = outcome.providers.find((p) => p.name === provider);
    if (status?.active) {
      proven.push(provider);
      if (withoutPinned) pinnedMemory = false;
      log.info('execution provider proven', { provider, ms: Math.round(performance.now() - started), ...(withoutPinned ? { pinned_memory: false } : {}) });
    } else {
      log.warn('execution provider skipped', { provider, reason: status?.reason ?? 'the probe did not report it' });
    }
  }
  return { providers: [...proven, 'cpu'], pinnedMemory };
}
