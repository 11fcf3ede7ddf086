// Start-up behaviour of the real service: a generated key when none is configured (printed and logged), the
// reference-classifier warning, and refusal to start on a missing or altered model file.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { request } from './helpers/http';
import { repoRoot } from './helpers/paths';
import { cli, storeEnv } from './helpers/scan';
import { startServer } from './helpers/server';

test('without CATCOMFORT_API_KEYS one random key is generated, printed once, and works', async () => {
  const server = await startServer({ CATCOMFORT_API_KEYS: '' });
  try {
    const printed = [...server.output().matchAll(/generated this API key for this run only: (\S+)/g)].map((m) => m[1]!);
    assert.equal(printed.length, 1);
    // The same key as a JSON log line, for log collectors.
    const logged = server
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { msg: string; api_key?: string })
      .filter((line) => line.msg === 'generated API key');
    assert.deepEqual(logged.map((line) => line.api_key), printed);
    assert.equal((await request(`${server.url}/v2/models`, { key: printed[0]! })).status, 200);
    assert.equal((await request(`${server.url}/v2/models`)).status, 401, 'the test key is not configured');
  } finally {
    await server.stop();
  }
  // A warning, on stderr: complete only now that the server has stopped.
  assert.match(server.output(), /UNTRAINED reference network; its score is not a trained comfort signal/);
  const other = await startServer({ CATCOMFORT_API_KEYS: '' });
  await other.stop();
  assert.notEqual(/only: (\S+)/.exec(other.output())![1], /only: (\S+)/.exec(server.output())![1]);
});

function startWithModels(modelsDir: string) {
  return spawnSync(process.execPath, [path.join(repoRoot, 'dist/src/main.js')], {
    env: { ...process.env, CATCOMFORT_MODELS_DIR: modelsDir, CATCOMFORT_PORT: '0', CATCOMFORT_HOST: '127.0.0.1', CATCOMFORT_DATA_DIR: mkdtempSync(path.join(os.tmpdir(), 'cc-start-')) },
    encoding: 'utf8',
    timeout: 60_000,
  });
}

test('a missing or altered model file stops start-up, naming the file and the sha256 expected', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cc-models-'));
  cpSync(path.join(repoRoot, 'models'), dir, { recursive: true });
  const detector = path.join(dir, 'bc-legacy', 'yolox_nano.onnx');
  writeFileSync(detector, 'not the model');
  const altered = startWithModels(dir);
  assert.equal(altered.status, 1);
  assert.ok(altered.stderr.includes(detector), altered.stderr);
  assert.match(altered.stderr, /expected c789161ed43c8269fcd4e67c67eeeb4e80c622da2eb296a20bc6007bd18a0b7d/);

  cpSync(path.join(repoRoot, 'models'), dir, { recursive: true });
  const backbone = path.join(dir, 'bc-v1', 'mobilenetv2-12.int8-7bit.onnx');
  writeFileSync(backbone, '');
  const broken = startWithModels(dir);
  assert.equal(broken.status, 1);
  assert.ok(broken.stderr.includes(backbone), broken.stderr);
});

test('an invalid manifest stops start-up with the offending path', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cc-models-'));
  cpSync(path.join(repoRoot, 'models'), dir, { recursive: true });
  const manifest = path.join(dir, 'bc-v1', 'manifest.json');
  writeFileSync(manifest, JSON.stringify({ id: 'bc-v1' }));
  const result = startWithModels(dir);
  assert.equal(result.status, 1);
  assert.match(result.stderr, /Invalid model manifest .*manifest\.json/);
});

test('v1/v2 keys issued with the CLI (stored hashed) work beside CATCOMFORT_API_KEYS', async () => {
  const env = storeEnv(mkdtempSync(path.join(os.tmpdir(), 'cc-keys-')), null);
  const out = cli(env, 'keys', 'create', '--name', 'partner');
  const key = /(cc_\S+)/.exec(out)?.[1];
  assert.ok(key, out);
  const server = await startServer(env);
  try {
    assert.equal((await request(`${server.url}/ping`, { key })).status, 200);
    assert.equal((await request(`${server.url}/v2/models`, { key })).status, 200);
    assert.equal((await request(`${server.url}/v2/models`)).status, 200, 'the configured key still works');
    assert.equal((await request(`${server.url}/v2/models`, { key: `${key}x` })).status, 401);
  } finally {
    await server.stop();
  }
});
