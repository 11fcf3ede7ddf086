// Configuration: the GPU path (cuDNN's convolution search, the provider probe's time limit), metrics
// access, the HTTP front's limits, Config as the table's values, and the warning about unknown
// CATCOMFORT_* variables.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import { test } from 'node:test';
import { ConfigError, KNOWN_VARIABLES, loadConfig } from '../src/config';
import { settingsTable } from '../src/config/doc-table';
import { defaultHttpThreads } from '../src/config/settings';
import { editDistance, unknownVariables } from '../src/config/unknown';

test('CATCOMFORT_CUDNN_CONV_ALGO_SEARCH: HEURISTIC by default, any case accepted, anything else refused', () => {
  assert.equal(loadConfig({}).cudnnConvAlgoSearch, 'HEURISTIC');
  assert.equal(loadConfig({ CATCOMFORT_CUDNN_CONV_ALGO_SEARCH: 'exhaustive' }).cudnnConvAlgoSearch, 'EXHAUSTIVE');
  assert.equal(loadConfig({ CATCOMFORT_CUDNN_CONV_ALGO_SEARCH: 'DEFAULT' }).cudnnConvAlgoSearch, 'DEFAULT');
  assert.throws(() => loadConfig({ CATCOMFORT_CUDNN_CONV_ALGO_SEARCH: 'fastest' }), (e: unknown) => e instanceof ConfigError && /CATCOMFORT_CUDNN_CONV_ALGO_SEARCH/.test(e.message));
});

test('CATCOMFORT_PROVIDER_PROBE_TIMEOUT_MS: 300000 by default, at least 1000', () => {
  assert.equal(loadConfig({}).providerProbeTimeoutMs, 300_000);
  assert.equal(loadConfig({ CATCOMFORT_PROVIDER_PROBE_TIMEOUT_MS: '2000' }).providerProbeTimeoutMs, 2000);
  assert.throws(() => loadConfig({ CATCOMFORT_PROVIDER_PROBE_TIMEOUT_MS: '10' }), /CATCOMFORT_PROVIDER_PROBE_TIMEOUT_MS must be between 1000 and 3600000/);
});

test('CATCOMFORT_METRICS: key by default, open or off; CATCOMFORT_METRICS_PORT unset by default', () => {
  assert.deepEqual(loadConfig({}).metrics, { access: 'key', port: null });
  assert.deepEqual(loadConfig({ CATCOMFORT_METRICS: 'OPEN', CATCOMFORT_METRICS_PORT: '9464' }).metrics, { access: 'open', port: 9464 });
  assert.equal(loadConfig({ CATCOMFORT_METRICS: 'off' }).metrics.access, 'off');
  assert.throws(() => loadConfig({ CATCOMFORT_METRICS: 'public' }), /CATCOMFORT_METRICS must be key, open or off, got "public"/);
  assert.throws(() => loadConfig({ CATCOMFORT_METRICS_PORT: 'x' }), /CATCOMFORT_METRICS_PORT must be an integer/);
});

test("the HTTP front's settings: the upstream pool's limits, its threads and the client idle timeout, from the table", () => {
  const httpThreads = defaultHttpThreads(os.availableParallelism());
  assert.deepEqual(loadConfig({}).front, { upstreamConnections: 256, upstreamQueue: 1024, trustedProxies: [], httpThreads, idleTimeoutMs: 10_000 });
  // The main thread below 8 cores, then one thread per 4 cores, at most 8.
  assert.deepEqual([1, 2, 7, 8, 16, 31, 64, 256].map(defaultHttpThreads), [1, 1, 1, 2, 4, 7, 8, 8]);
  assert.equal(loadConfig({ CATCOMFORT_HTTP_THREADS: '3' }).front.httpThreads, 3);
  assert.throws(() => loadConfig({ CATCOMFORT_HTTP_THREADS: '0' }), /CATCOMFORT_HTTP_THREADS must be between 1 and 64, got 0/);
  assert.equal(loadConfig({ CATCOMFORT_CLIENT_IDLE_TIMEOUT_MS: '2500' }).front.idleTimeoutMs, 2500);
  assert.throws(() => loadConfig({ CATCOMFORT_CLIENT_IDLE_TIMEOUT_MS: '50' }), /CATCOMFORT_CLIENT_IDLE_TIMEOUT_MS must be between 100 and 3600000, got 50/);
  assert.throws(() => loadConfig({ CATCOMFORT_TRUSTED_PROXIES: '10.0.0.0/33' }), /CATCOMFORT_TRUSTED_PROXIES: "10.0.0.0\/33": the prefix length must be 0-32/);
});

test('Config holds the service\'s settings only: rows for tools, the CLI and tests are left out', () => {
  const config = loadConfig({ CATCOMFORT_SHARED_DIR: '/s', CATCOMFORT_ADMIN_URL: 'http://x' }) as unknown as Record<string, unknown>;
  for (const key of ['sharedDir', 'adminUrl', 'adminKey', 'modelMirror', 'testDatabaseUrl', 'testPgBin']) assert.equal(key in config, false, key);
  assert.equal(loadConfig({ CATCOMFORT_VIDEO_MEMORY_MB: '64' }).video.memoryBytes, 64 * 1024 * 1024);
});

test('unknown CATCOMFORT_* variables are named with the closest known one; known and other variables are not', () => {
  assert.equal(editDistance('kitten', 'sitting'), 3);
  assert.equal(editDistance('', 'abc'), 3);
  assert.equal(editDistance('same', 'same'), 0);
  const env = {
    CATCOMFORT_API_KEY: 'x',
    CATCOMFORT_PORTT: '1',
    CATCOMFORT_DATABSE_URL: 'x',
    CATCOMFORT_PORT: '8080',
    CATCOMFORT_TEST_PG_BIN: '/usr/lib/postgresql/16/bin',
    HOME: '/root',
    CATCOMFORTABLE: 'x',
  };
  assert.deepEqual(unknownVariables(env), [
    { name: 'CATCOMFORT_API_KEY', closest: 'CATCOMFORT_API_KEYS' },
    { name: 'CATCOMFORT_DATABSE_URL', closest: 'CATCOMFORT_DATABASE_URL' },
    { name: 'CATCOMFORT_PORTT', closest: 'CATCOMFORT_PORT' },
  ]);
  assert.deepEqual(unknownVariables(Object.fromEntries(KNOWN_VARIABLES.map((name) => [name, '1']))), []);
});

test('every CATCOMFORT_* variable the service, the benchmarks and the test helpers read is listed as known', () => {
  const root = path.resolve(__dirname, '../..');
  const read = new Set<string>();
  for (const dir of ['src', 'bench', 'test/helpers']) {
    for (const file of readdirSync(path.join(root, dir), { recursive: true, encoding: 'utf8' })) {
      if (!file.endsWith('.ts')) continue;
      for (const [name] of readFileSync(path.join(root, dir, file), 'utf8').matchAll(/CATCOMFORT_[A-Z0-9_]+/g)) if (!name.endsWith('_')) read.add(name);
    }
  }
  const known: readonly string[] = KNOWN_VARIABLES;
  assert.ok(read.size > 30, `${read.size} names found`);
  assert.deepEqual([...read].filter((name) => !known.includes(name)), []);
});

test('CATCOMFORT_PRECISION: unset (auto) by default, int8 or fp32 in any case, anything else refused', () => {
  assert.equal(loadConfig({}).precision, null);
  assert.equal(loadConfig({ CATCOMFORT_PRECISION: 'FP32' }).precision, 'fp32');
  assert.equal(loadConfig({ CATCOMFORT_PRECISION: 'int8' }).precision, 'int8');
  assert.throws(() => loadConfig({ CATCOMFORT_PRECISION: 'fp16' }), /CATCOMFORT_PRECISION must be int8 or fp32, got "fp16"/);
});

test("docs/configuration.md's table of settings is the settings table's (npm run docs:settings writes it)", () => {
  const page = readFileSync(path.resolve(__dirname, '../../docs/configuration.md'), 'utf8');
  assert.ok(page.includes(settingsTable()), 'run npm run docs:settings');
  assert.equal(settingsTable().split('\n').filter((l) => l.startsWith('| `CATCOMFORT_')).length, KNOWN_VARIABLES.length);
});
