// The micro-batcher, deterministically: a controllable run function, a manual clock where time
// matters, long delays where a batch must NOT close by time, and no sleeps that a slow machine
// could lose.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AbortedError, ClosedError, DeadlineError, MicroBatcher, QueueFullError, type BatcherClock } from '../src/pipeline/batcher';

/** A clock that moves only when the test calls advance(), firing due timers in order. */
function manualClock() {
  let now = 0;
  let nextId = 1;
  const timers = new Map<number, { at: number; callback: () => void }>();
  const clock: BatcherClock & { advance(ms: number): void } = {
    now: () => now,
    setTimeout(callback, ms) {
      const id = nextId++;
      timers.set(id, { at: now + ms, callback });
      return id;
    },
    clearTimeout(handle) {
      timers.delete(handle as number);
    },
    advance(ms) {
      const target = now + ms;
      for (;;) {
        let next: [number, { at: number; callback: () => void }] | undefined;
        for (const entry of timers) if (entry[1].at <= target && (next === undefined || entry[1].at < next[1].at)) next = entry;
        if (next === undefined) break;
        timers.delete(next[0]);
        now = next[1].at;
        next[1].callback();
      }
      now = target;
    },
  };
  return clock;
}

/** A run function whose batches complete only when the test says so. */
function gatedRun() {
  const calls: Array<{ items: number[]; finish: () => void }> = [];
  const waiters: Array<() => void> = [];
  const run = (items: number[]) =>
    new Promise<number[]>((resolve) => {
      calls.push({ items, finish: () => resolve(items.map((x) => x * 10)) });
      waiters.splice(0).forEach((w) => w());
    });
  const nextCall = async (index: number) => {
    while (calls.length <= index) await new Promise<void>((r) => waiters.push(r));
    return calls[index]!;
  };
  return { run, calls, nextCall };
}

test('a batch closes at maxBatchSize without waiting for the delay', async () => {
  const gate = gatedRun();
  const b = new MicroBatcher({ maxBatchSize: 4, maxQueueDelayUs: 60_000_000, maxQueue: 100, maxInFlight: 1 }, gate.run);
  const results = [1, 2, 3, 4].map((x) => b.submit(x));
  const call = await gate.nextCall(0);
  assert.deepEqual(call.items, [1, 2, 3, 4]);
  call.finish();
  assert.deepEqual(await Promise.all(results), [10, 20, 30, 40]);
  assert.equal(b.stats().batchSizes[4], 1);
  await b.close();
});

test('a partial batch closes when its oldest request has waited maxQueueDelayUs', async () => {
  const gate = gatedRun();
  const clock = manualClock();
  const b = new MicroBatcher({ maxBatchSize: 8, maxQueueDelayUs: 20_000, maxQueue: 100, maxInFlight: 1 }, gate.run, clock);
  const results = [b.submit(1), b.submit(2)];
  clock.advance(15);
  results.push(b.submit(3));
  clock.advance(4);
  assert.equal(gate.calls.length, 0, 'closed before the delay');
  clock.advance(1);
  assert.equal(gate.calls.length, 1, 'not closed at the delay of the oldest request');
  const call = gate.calls[0]!;
  assert.deepEqual(call.items, [1, 2, 3]);
  call.finish();
  assert.deepEqual(await Promise.all(results), [10, 20, 30]);
  const stats = b.stats();
  assert.equal(stats.batchSizes[3], 1);
  assert.equal(stats.queueTimeUsMax, 20_000);
  assert.equal(stats.queueTimeUsTotal, 20_000 + 20_000 + 5_000);
  await b.close();
});

test('requests queued behind a running batch form the next batch', async () => {
  const gate = gatedRun();
  const b = new MicroBatcher({ maxBatchSize: 2, maxQueueDelayUs: 60_000_000, maxQueue: 100, maxInFlight: 1 }, gate.run);
  const results = [1, 2, 3, 4, 5].map((x) => b.submit(x));
  (await gate.nextCall(0)).finish();
  (await gate.nextCall(1)).finish();
  // The fifth waits for the (very long) delay until close() flushes it.
  const closing = b.close();
  (await gate.nextCall(2)).finish();
  await closing;
  assert.deepEqual(await Promise.all(results), [10, 20, 30, 40, 50]);
  assert.deepEqual(gate.calls.map((c) => c.items), [[1, 2], [3, 4], [5]]);
});

test('a queued request past its deadline is rejected and never runs', async () => {
  const gate = gatedRun();
  const clock = manualClock();
  const b = new MicroBatcher({ maxBatchSize: 1, maxQueueDelayUs: 0, maxQueue: 100, maxInFlight: 1 }, gate.run, clock);
  const first = b.submit(1);
  const blocked = await gate.nextCall(0);
  const late = b.submit(2, { deadline: clock.now() + 30 });
  const rejected = assert.rejects(late, DeadlineError);
  clock.advance(29);
  assert.equal(b.stats().queued, 1, 'dropped before its deadline');
  clock.advance(1);
  await rejected;
  assert.equal(b.stats().queued, 0);
  blocked.finish();
  assert.equal(await first, 10);
  await b.close();
  assert.equal(gate.calls.length, 1);
  assert.equal(b.stats().expired, 1);
});

test('a full queue rejects at once with a retry hint', async () => {
  const gate = gatedRun();
  const b = new MicroBatcher({ maxBatchSize: 1, maxQueueDelayUs: 0, maxQueue: 2, maxInFlight: 1 }, gate.run);
  const running = b.submit(1);
  const blocked = await gate.nextCall(0);
  const queued = [b.submit(2), b.submit(3)];
  const error = await b.submit(4).then(
    () => assert.fail('should be rejected'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof QueueFullError);
  assert.ok(error.retryAfterSeconds >= 1);
  assert.equal(b.stats().rejectedFull, 1);
  blocked.finish();
  (await gate.nextCall(1)).finish();
  (await gate.nextCall(2)).finish();
  assert.deepEqual(await Promise.all([running, ...queued]), [10, 20, 30]);
  await b.close();
});

test('an aborted request leaves the queue', async () => {
  const gate = gatedRun();
  const b = new MicroBatcher({ maxBatchSize: 4, maxQueueDelayUs: 60_000_000, maxQueue: 100, maxInFlight: 1 }, gate.run);
  const controller = new AbortController();
  const kept = b.submit(1);
  const dropped = b.submit(2, { signal: controller.signal });
  assert.equal(b.stats().queued, 2);
  controller.abort();
  await assert.rejects(dropped, AbortedError);
  assert.equal(b.stats().queued, 1);
  const closing = b.close();
  const call = await gate.nextCall(0);
  assert.deepEqual(call.items, [1]);
  call.finish();
  await closing;
  assert.equal(await kept, 10);
  assert.equal(b.stats().aborted, 1);
});

test('after close, submissions are refused', async () => {
  const gate = gatedRun();
  const b = new MicroBatcher({ maxBatchSize: 4, maxQueueDelayUs: 0, maxQueue: 10, maxInFlight: 1 }, gate.run);
  await b.close();
  await assert.rejects(b.submit(1), ClosedError);
});

test('with one timer for the queue, each queued request still expires at its own deadline, in any order', async () => {
  const gate = gatedRun();
  const clock = manualClock();
  const b = new MicroBatcher({ maxBatchSize: 1, maxQueueDelayUs: 0, maxQueue: 100, maxInFlight: 1 }, gate.run, clock);
  const first = b.submit(1);
  const blocked = await gate.nextCall(0);
  const deadlines = [50, 20, 40, 30, 60];
  const expired: number[] = [];
  const late = deadlines.map((ms) => b.submit(ms, { deadline: clock.now() + ms }).catch((e: unknown) => (assert.ok(e instanceof DeadlineError), expired.push(ms))));
  for (const ms of [20, 30, 40, 50, 60]) {
    clock.advance(ms - 1 - clock.now());
    assert.equal(b.stats().queued, deadlines.filter((d) => d >= ms).length, `all but those due before ${ms} ms still queued`);
    clock.advance(1);
    await new Promise(setImmediate);
    assert.deepEqual(expired, [20, 30, 40, 50, 60].filter((d) => d <= ms), `${ms} ms: expired exactly those due`);
  }
  await Promise.all(late);
  assert.equal(b.stats().expired, 5);
  blocked.finish();
  assert.equal(await first, 10);
  await b.close();
});

test('a steady flow of requests with deadlines sets one timer, not one each', async () => {
  const clock = manualClock();
  let timersSet = 0;
  const counted: BatcherClock = { ...clock, setTimeout: (callback, ms) => (timersSet++, clock.setTimeout(callback, ms)) };
  const b = new MicroBatcher({ maxBatchSize: 1, maxQueueDelayUs: 0, maxQueue: 100, maxInFlight: 1 }, async (items: number[]) => items, counted);
  for (let i = 0; i < 50; i++) {
    assert.equal(await b.submit(i, { deadline: clock.now() + 1000 }), i);
    clock.advance(1);
  }
  assert.equal(timersSet, 1);
  assert.equal(b.stats().expired, 0);
  await b.close();
});
