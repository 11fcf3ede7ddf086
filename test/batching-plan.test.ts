// How batching is chosen (src/packs/batching-plan.ts, docs/gpu.md "How batching is chosen"): the CPU
// rule keeps today's figures, the GPU rule fills the device from the core count, settings win,
// and warm-up's session timings (injected here) fit the batch size to the knee.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kneeBatchSize, planBatching } from '../src/packs/batching-plan';
import { chooseSizes } from '../src/packs/session-sizes';

const auto = { maxBatchSize: null, maxQueueDelayUs: 500, maxQueue: null, maxInFlight: null };

test('CPU: 4 images x 2 batches in flight, queue 64, whatever the cores; not fitted at warm-up', () => {
  for (const cores of [2, 16, 64]) {
    const plan = planBatching(auto, false, cores);
    assert.deepEqual(plan.batching, { maxBatchSize: 4, maxQueueDelayUs: 500, maxQueue: 64, maxInFlight: 2 });
    assert.equal(plan.fitToSessions, false);
    assert.equal(plan.chosenBy, 'cpu rule');
  }
});

test('GPU: 32 images, a batch in flight per 4 cores (2 to 8), a queue of 4 pipelines; fitted at warm-up', () => {
  const at = (cores: number) => planBatching(auto, true, cores);
  assert.deepEqual(at(16).batching, { maxBatchSize: 32, maxQueueDelayUs: 500, maxQueue: 512, maxInFlight: 4 });
  assert.equal(at(16).chosenBy, 'gpu rule (16 cores)');
  assert.equal(at(16).fitToSessions, true);
  assert.equal(at(2).batching.maxInFlight, 2);
  assert.equal(at(128).batching.maxInFlight, 8);
});

test('settings win over either rule; a set batch size is never fitted', () => {
  const set = { maxBatchSize: 8, maxQueueDelayUs: 0, maxQueue: 10, maxInFlight: 3 };
  const plan = planBatching(set, true, 16);
  assert.deepEqual(plan.batching, set);
  assert.equal(plan.chosenBy, 'settings');
  assert.equal(plan.fitToSessions, false);
  assert.equal(planBatching({ ...auto, maxInFlight: 1 }, true, 16).batching.maxQueue, 128, 'the queue follows the in-flight set (4 x 32 x 1)');
});

test('the knee from injected warm-up timings: the largest size that still saved a tenth per image', () => {
  // As measured on an H200 (../shared/gpu/README.md): a Run of 8 costs what a Run of 1 does.
  const flat = chooseSizes([1, 2, 4, 8, 16].map((batch) => ({ batch, msPerImage: 6 / batch })));
  assert.equal(kneeBatchSize(flat, 1, 16), 16);
  // Per-image cost stops falling after 4: the batch stays at 4 (never under the CPU batch).
  const saturated = chooseSizes([1, 2, 4, 8, 16].map((batch) => ({ batch, msPerImage: batch <= 4 ? 6 / batch : 1.45 })));
  assert.equal(kneeBatchSize(saturated, 1, 16), 4);
  // Two views per image: a Run of 16 rows is 8 images.
  const halfKnee = chooseSizes([1, 2, 4, 8, 16, 32].map((batch) => ({ batch, msPerImage: batch <= 16 ? 6 / batch : 0.37 })));
  assert.equal(kneeBatchSize(halfKnee, 2, 16), 8);
  assert.equal(kneeBatchSize([], 1, 16), 16, 'no timings: the planned size');
});
