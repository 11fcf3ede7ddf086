// The simulated device (CATCOMFORT_BENCH_SIMULATE, benchmarks and tests only; docs/gpu.md "A
// simulated device"): a Run takes its profile's time and no less, answers are the warm-up photo's
// as the real networks give them (placed on each photo's own size while decoding is real), the batching rule plans as for a GPU and fits the batch to the
// profile (a device whose Runs pay with the batch, and one whose cost grows with it), /v2/stats and
// the start log say so, and the service's binding cannot simulate at all.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { readDeviceProfile, type StageCost } from '../src/native/device-profile';
import { photo, repoRoot } from './helpers/paths';
import { startServer, TEST_KEY, type TestServer } from './helpers/server';

/** One Run's milliseconds at `batch` as the profile gives them, worked out apart from native's rule (native/simulated_device.cc). */
function runMs(cost: StageCost, batch: number): { hostMs: number; deviceMs: number } {
  const at = (ms: number[]) => {
    const b = cost.batches;
    if (b.length === 1) return ms[0]!;
    let hi = 1;
    while (hi + 1 < b.length && b[hi]! < batch) hi++;
    const value = ms[hi - 1]! + ((ms[hi]! - ms[hi - 1]!) * (batch - b[hi - 1]!)) / (b[hi]! - b[hi - 1]!);
    return Math.max(0, value);
  };
  return { hostMs: at(cost.hostMs), deviceMs: at(cost.deviceMs) };
}

const WARM_UP = readFileSync(path.join(repoRoot, 'models/warmup-cat.png')).toString('base64');
const DOG = readFileSync(photo('070_darknet_dog.jpg')).toString('base64');

/** A profile with Runs long enough to measure on a busy machine: the detector 20 + 10 per image ms, the crop 15 ms. */
const SLOW = {
  name: 'slow-test',
  streams: 1,
  decodeHostMs: 3,
  detector: { batches: [1, 2], hostMs: [8, 8], deviceMs: [12, 22] },
  classifier: { batches: [1], hostMs: [5], deviceMs: [10] },
};

async function post(server: TestServer, image: string): Promise<any> {
  const response = await fetch(`${server.url}/v2/predict`, { method: 'POST', headers: { 'api-key': TEST_KEY, 'content-type': 'application/json' }, body: JSON.stringify({ image }) });
  return response.json();
}

const stats = async (server: TestServer) => (await fetch(`${server.url}/v2/stats`, { headers: { 'api-key': TEST_KEY } })).json() as Promise<any>;

/** The start log's warm-up line of `model`. */
function warmedUp(server: TestServer, model = 'bc-v1'): any {
  const line = server.output().split('\n').find((l) => l.includes('"msg":"model warmed up"') && l.includes(`"model":"${model}"`));
  assert.ok(line, server.output());
  return JSON.parse(line);
}

describe('a simulated device', () => {
  let real: TestServer;
  let slow: TestServer;
  before(async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cc-sim-'));
    const profile = path.join(dir, 'slow.json');
    writeFileSync(profile, JSON.stringify(SLOW));
    [real, slow] = await Promise.all([
      startServer({ CATCOMFORT_DATA_DIR: path.join(dir, 'real'), CATCOMFORT_SCAN_WORKERS: '0', CATCOMFORT_PRECISION: 'fp32' }),
      // The front on two threads: they take the listening socket through the binding before the packs load.
      startServer({ CATCOMFORT_DATA_DIR: path.join(dir, 'slow'), CATCOMFORT_SCAN_WORKERS: '0', CATCOMFORT_BENCH_SIMULATE: profile, CATCOMFORT_BENCH_SIMULATE_DECODE: 'true', CATCOMFORT_BATCH_MAX_SIZE: '2', CATCOMFORT_HTTP_THREADS: '2' }),
    ]);
  });
  after(() => Promise.all([real?.stop(), slow?.stop()]));

  test('each session size is timed at its profile time or a little more, and the device counts its busy time', async () => {
    const timings = warmedUp(slow).session_batch_timings;
    for (const [stage, cost] of [['detector', SLOW.detector], ['classifier', SLOW.classifier]] as const) {
      for (const t of timings[stage] as Array<{ batch: number; msPerImage: number }>) {
        const { hostMs, deviceMs } = runMs(cost, t.batch);
        const ms = t.msPerImage * t.batch;
        // At least the profile's time; how little more is the simulated-device bench's to say (a bound
        // here failed at 3x beside other work on 2 cores).
        assert.ok(ms >= hostMs + deviceMs - 0.05, `${stage} batch ${t.batch}: ${ms} ms, profile ${hostMs + deviceMs}`);
      }
    }
    const before = (await stats(slow)).simulatedDevice;
    assert.equal(before.profile, 'slow-test');
    await post(slow, DOG);
    const after = (await stats(slow)).simulatedDevice;
    // One detector Run (batch 1) and one crop Run: their device parts at least.
    assert.equal(after.runs - before.runs, 2);
    assert.ok(after.busyMs - before.busyMs >= 12 + 10 - 0.05, JSON.stringify({ before, after }));
  });

  test("with decoding simulated too, every photo gets the warm-up photo's answer as the real networks give it (fp32)", async () => {
    const truth = await post(real, WARM_UP);
    assert.equal(truth.detection, 'detected');
    for (const image of [DOG, WARM_UP]) {
      const answer = await post(slow, image);
      assert.deepEqual([answer.detection, answer.cat, answer.image, answer.prediction], [truth.detection, truth.cat, truth.image, truth.prediction]);
    }
    // The real service tells the dog from the cat.
    assert.notDeepEqual((await post(real, DOG)).cat, truth.cat);
  });

  test('the start log and /v2/stats say so; a service without the switch reports no simulated device', async () => {
    assert.match(slow.output(), /session Runs are SIMULATED on device profile \\"slow-test\\"/);
    assert.equal((await stats(real)).simulatedDevice, null);
    assert.doesNotMatch(real.output(), /SIMULATED/);
  });
});

test("the service's binding has no way to simulate: no simulate entry point, and simulatedDevice() is null", () => {
  const script = `const a = require(${JSON.stringify(path.join(repoRoot, 'build/Release/catcomfort.node'))}); process.stdout.write(JSON.stringify([typeof a.simulate, a.simulatedDevice()]));`;
  assert.deepEqual(JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' })), ['undefined', null]);
  const bench = `const a = require(${JSON.stringify(path.join(repoRoot, 'build/Release/catcomfort_bench.node'))}); process.stdout.write(typeof a.simulate);`;
  assert.equal(execFileSync(process.execPath, ['-e', bench], { encoding: 'utf8' }), 'function');
});

describe('the batching rule on two device shapes, 16 cores played', () => {
  const servers: Record<string, TestServer> = {};
  before(async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cc-sim-rule-'));
    for (const profile of ['h200', 'cpu-like']) {
      servers[profile] = await startServer({ CATCOMFORT_DATA_DIR: path.join(dir, profile), CATCOMFORT_SCAN_WORKERS: '0', CATCOMFORT_BENCH_SIMULATE: profile, CATCOMFORT_BENCH_CORES: '16' });
    }
  });
  after(() => Promise.all(Object.values(servers).map((s) => s.stop())));

  test('with decoding real, each photo keeps its own size and gets the warm-up photo\'s detections and scores placed on it', async () => {
    const [dog, cat] = [await post(servers.h200!, DOG), await post(servers.h200!, WARM_UP)];
    assert.deepEqual(dog.image, { width: 768, height: 576 });
    assert.notDeepEqual(dog.image, cat.image);
    assert.deepEqual([dog.detection, dog.cat.detection_confidence, dog.prediction], [cat.detection, cat.cat.detection_confidence, cat.prediction]);
  });

  test('a device whose Runs pay with the batch keeps the large batch; one whose cost grows with it falls back to the smallest', async () => {
    const batching = async (profile: string) => (await stats(servers[profile]!)).models['bc-v1'].batching;
    const h200 = await batching('h200');
    const cpuLike = await batching('cpu-like');
    assert.deepEqual([h200.maxBatchSize, h200.maxInFlight, h200.chosenBy], [32, 4, 'gpu rule (16 cores)']);
    assert.deepEqual([cpuLike.maxBatchSize, cpuLike.maxInFlight], [4, 4]);
    // cpu-like: only batch 1 saves anything per image, so it alone stays.
    assert.deepEqual(warmedUp(servers['cpu-like']!).session_batches.detector, [1]);
    assert.equal(readDeviceProfile('h200').name, 'h200');
  });
});
