// A provider can never take the service down: accelerated providers are proven in a child
// process first (src/packs/probe/provider-probe.ts). Here (CPU only) the probe is made to fail on
// purpose from outside the service: test/helpers/probe-fault.ts, preloaded through NODE_OPTIONS
// into the probe child, makes it crash, exit, fail or hang as PROBE_FAULT says; the service starts
// on CPU and logs the cause. A pass is remembered in the data folder and not probed again
// (src/packs/probe/verdicts.ts).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { loadConfig } from '../src/config';
import { probeKey, rememberedVerdict, rememberVerdict } from '../src/packs/probe/verdicts';
import { provenProviders } from '../src/packs/probe/provider-probe';
import { postJson, request } from './helpers/http';
import { photo } from './helpers/paths';
import { probeFaultEnv } from './helpers/probe-fault';
import { startServer } from './helpers/server';

interface LogLine {
  msg: string;
  provider?: string;
  cause?: string;
  reason?: string;
}

function logLines(output: string): LogLine[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{"level"'))
    .map((line) => JSON.parse(line) as LogLine);
}

/** Starts the service with CUDA first, waits until it listens, stops it; returns its log lines. */
async function startWithCuda(env: Record<string, string>): Promise<LogLine[]> {
  const server = await startServer({ CATCOMFORT_EXECUTION_PROVIDERS: 'cuda,cpu', ...env });
  try {
    assert.equal((await request(`${server.url}/v2/models`)).status, 200);
  } finally {
    await server.stop();
  }
  return logLines(server.output());
}

const PINNED_RETRY = 'execution provider failed with pinned memory; probing again without it';

function activeProviders(lines: LogLine[]): Array<string | undefined> {
  return lines.filter((l) => l.msg === 'execution provider active').map((l) => l.provider);
}

/** The one 'execution provider disabled' line's cause; the service runs on CPU. */
function disabledCause(lines: LogLine[]): string {
  assert.deepEqual(activeProviders(lines), ['cpu'], 'the service runs on CPU');
  const disabled = lines.filter((l) => l.msg === 'execution provider disabled');
  assert.equal(disabled.length, 1, JSON.stringify(lines));
  assert.equal(disabled[0]!.provider, 'cuda');
  return disabled[0]!.cause!;
}

test('a probe that crashes with SIGSEGV disables the provider; the service answers on CPU', async () => {
  const server = await startServer({ CATCOMFORT_EXECUTION_PROVIDERS: 'cuda,cpu', ...probeFaultEnv('segv') });
  try {
    const image = readFileSync(photo('000_skimage_chelsea.png')).toString('base64');
    const answer = await postJson(`${server.url}/v2/predict`, { image });
    assert.equal(answer.status, 200);
    assert.equal(answer.body.detection, 'detected');
  } finally {
    await server.stop();
  }
  const lines = logLines(server.output());
  assert.match(disabledCause(lines), /^probe process crashed with SIGSEGV \(at: .+\)$/);
  assert.equal(lines.filter((l) => l.msg === PINNED_RETRY).length, 1, 'a crash is tried again without pinned memory first');
});

test('a probe that exits non-zero disables the provider', async () => {
  assert.match(disabledCause(await startWithCuda(probeFaultEnv('exit'))), /^probe process exited with code 70 /);
});

test('a probe that fails with an error disables the provider, naming the error', async () => {
  const cause = disabledCause(await startWithCuda(probeFaultEnv('error')));
  assert.match(cause, /^probe failed: fault injected by PROBE_FAULT \(at: building the sessions\)$/);
});

test('a probe that fails only with pinned memory is run again without it; the provider is not disabled', async () => {
  const lines = await startWithCuda(probeFaultEnv('pinned'));
  const retry = lines.filter((l) => l.msg === PINNED_RETRY);
  assert.equal(retry.length, 1, JSON.stringify(lines));
  assert.match(retry[0]!.cause!, /^probe failed: fault injected by PROBE_FAULT with pinned memory /);
  assert.equal(lines.filter((l) => l.msg === 'execution provider disabled').length, 0, 'the second probe passed');
  // CPU-only machines: the passing probe reports CUDA skipped (its libraries do not load).
  assert.ok(lines.some((l) => l.provider === 'cuda' && (l.msg === 'execution provider skipped' || l.msg === 'execution provider proven')));
});

test('a probe that hangs past CATCOMFORT_PROVIDER_PROBE_TIMEOUT_MS disables the provider', async () => {
  const lines = await startWithCuda({ ...probeFaultEnv('hang'), CATCOMFORT_PROVIDER_PROBE_TIMEOUT_MS: '2000' });
  assert.match(disabledCause(lines), /^probe gave no answer within 2000 ms /);
  assert.equal(lines.filter((l) => l.msg === PINNED_RETRY).length, 0, 'a timeout is not tried again');
});

test('a probe that passes without the provider loading reports it skipped, with its reason', async () => {
  const lines = await startWithCuda({});
  const cuda = lines.filter((l) => l.provider === 'cuda' && l.msg !== 'probing execution provider');
  // CPU-only machines: the CUDA libraries do not load. (Where they do, the probe proves CUDA
  // and this test does not apply.)
  if (cuda.some((l) => l.msg === 'execution provider proven')) return;
  assert.equal(cuda.length, 1, JSON.stringify(cuda));
  assert.equal(cuda[0]!.msg, 'execution provider skipped');
  assert.ok(cuda[0]!.reason, 'a reason is given');
  assert.deepEqual(activeProviders(lines), ['cpu']);
});

test('with CPU only there is no probe', async () => {
  const server = await startServer({ CATCOMFORT_EXECUTION_PROVIDERS: 'cpu', ...probeFaultEnv('segv') });
  await server.stop();
  const lines = logLines(server.output());
  assert.equal(lines.filter((l) => l.msg === 'probing execution provider').length, 0);
  assert.ok(lines.some((l) => l.msg === 'listening'));
});

test('probe verdicts: a remembered pass is used without probing; the key follows the packs; an outcome that is not a full pass is not remembered', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cc-verdicts-'));
  const file = path.join(dir, 'provider-probes.json');
  const config = loadConfig({ ...process.env, CATCOMFORT_EXECUTION_PROVIDERS: 'cuda,cpu', CATCOMFORT_PROVIDER_PROBE_TIMEOUT_MS: '60000' });
  const key = probeKey(config);
  assert.equal(probeKey(config), key, 'the same key every time');
  assert.notEqual(probeKey({ ...config, modelsDir: dir }), key, 'other packs, another key');
  assert.notEqual(probeKey({ ...config, cudnnConvAlgoSearch: 'EXHAUSTIVE' }), key, 'other settings, another key');

  // Here CUDA cannot load: the probe reports it skipped, which is not remembered.
  const probed = await provenProviders(config, file);
  assert.deepEqual(probed.providers, ['cpu']);
  assert.equal(existsSync(file), false);

  await rememberVerdict(file, key, { providers: ['cuda', 'cpu'], pinnedMemory: false });
  const started = performance.now();
  assert.deepEqual(await provenProviders(config, file), { providers: ['cuda', 'cpu'], pinnedMemory: false }, 'the remembered verdict');
  assert.ok(performance.now() - started < 5_000, 'no probe child was run');
  assert.equal(await rememberedVerdict(file, probeKey({ ...config, trtFp16: true })), null);
});
