// The malloc the service runs on (CATCOMFORT_ALLOCATOR, docs/operations.md "Memory"): started as
// deployed (bin/catcomfort-service), it runs on jemalloc where libjemalloc.so.2 is installed (.ci/run
// installs Debian's libjemalloc2) and answers; `glibc` keeps glibc's malloc with the addon's rules;
// asking for jemalloc where the service cannot have it stops start-up with a message.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { postJson, request } from './helpers/http';
import { parseMetrics } from './helpers/metrics';
import { photo, repoRoot } from './helpers/paths';
import { startServer, TEST_KEY } from './helpers/server';

const launcher = path.join(repoRoot, 'bin/catcomfort-service');
const jemalloc = `/usr/lib/${os.arch() === 'arm64' ? 'aarch64' : 'x86_64'}-linux-gnu/libjemalloc.so.2`;
const noJemalloc = existsSync(jemalloc) ? false : `${jemalloc} is not installed (Debian: libjemalloc2; .ci/run installs it)`;

/** jemalloc's bytes by state on /metrics (catcomfort_malloc_bytes), empty when the series is left out. */
async function mallocBytes(url: string): Promise<Record<string, number>> {
  const samples = parseMetrics((await request(`${url}/metrics`, { key: TEST_KEY })).text).filter((s) => s.name === 'catcomfort_malloc_bytes');
  return Object.fromEntries(samples.map((s) => [s.labels.state!, s.value]));
}

/** The `malloc` field of the ready line, the libraries the process has mapped, and jemalloc's bytes on /metrics after one answer. */
async function startedMalloc(env: Record<string, string>): Promise<{ malloc: Record<string, unknown>; maps: string; answer: number; bytes: Record<string, number> }> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cc-allocator-'));
  const server = await startServer({ ...env, CATCOMFORT_DATA_DIR: dataDir }, { command: launcher });
  try {
    const maps = readFileSync(`/proc/${server.child.pid}/maps`, 'utf8');
    const image = readFileSync(photo('000_skimage_chelsea.png')).toString('base64');
    const answer = (await postJson(`${server.url}/v2/predict`, { image }, {}, TEST_KEY)).status;
    const bytes = await mallocBytes(server.url);
    await server.stop();
    const ready = server
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, any>)
      .find((line) => line.msg === 'ready');
    assert.ok(ready, server.output());
    return { malloc: ready.malloc as Record<string, unknown>, maps, answer, bytes };
  } finally {
    await server.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

test('started as deployed, the service runs on jemalloc where it is installed, and answers', { skip: noJemalloc }, async () => {
  const started = await startedMalloc({});
  assert.equal(started.malloc.allocator, 'jemalloc');
  assert.equal(started.malloc.arena_max, 0);
  assert.ok(started.maps.includes('libjemalloc.so.2'));
  assert.equal(started.answer, 200);
  const { allocated, active, dirty, resident, retained } = started.bytes;
  assert.deepEqual(Object.keys(started.bytes).sort(), ['active', 'allocated', 'dirty', 'resident', 'retained']);
  assert.ok(allocated! > 0 && allocated! <= active! && active! + dirty! <= resident!, JSON.stringify(started.bytes));
  assert.ok(retained! >= 0);
});

test('CATCOMFORT_ALLOCATOR=glibc keeps glibc\'s malloc with the addon\'s arena and mapping rules', async () => {
  const started = await startedMalloc({ CATCOMFORT_ALLOCATOR: 'glibc' });
  assert.equal(started.malloc.allocator, 'glibc');
  assert.ok((started.malloc.arena_max as number) >= 2);
  assert.equal(started.malloc.own_mapping_bytes, 4 * 1024 * 1024);
  assert.ok(!started.maps.includes('libjemalloc'));
  assert.equal(started.answer, 200);
  assert.deepEqual(started.bytes, {});
});

test('CATCOMFORT_ALLOCATOR=jemalloc stops start-up when the service runs on another malloc', () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cc-allocator-'));
  try {
    const result = spawnSync(process.execPath, [path.join(repoRoot, 'dist/src/main.js')], {
      env: { ...process.env, LD_PRELOAD: '', CATCOMFORT_HOST: '127.0.0.1', CATCOMFORT_PORT: '0', CATCOMFORT_API_KEYS: TEST_KEY, CATCOMFORT_DATA_DIR: dataDir, CATCOMFORT_ALLOCATOR: 'jemalloc' },
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.equal(result.status, 1, result.stderr);
    assert.match(result.stderr, /Start-up failed: CATCOMFORT_ALLOCATOR=jemalloc, but the service runs on glibc's malloc: start it with bin\/catcomfort-service/);
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
});
