// Main-thread memory freed in small steps (docs/operations.md "Memory"): image bytes of the main
// thread's own (src/native/own-memory.ts, src/memory/lent-bytes.ts lendOwnMemory) are freed by the addon once the
// request and every analysis holding them have let go, and only when they are the whole of their
// buffer (or, for a gRPC message, most of it); the looks at external memory
// (src/memory/external-collections.ts) collect after 4 MiB of growth from the low point, at most
// once per 10 s.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ExternalCollections, MIN_GAP_MS, STEP_BYTES } from '../src/memory/external-collections';
import { holdLentBytes } from '../src/memory/lent-bytes';
import { freeMessageWhenRead, freeWhenRead } from '../src/native/own-memory';

const KIB = 1024;

test("an image's buffer is freed once the request and the analysis reading it have let go", () => {
  const image = Buffer.alloc(100 * KIB, 7);
  const request = freeWhenRead(image)!;
  assert.ok(request, 'the whole of its buffer: lent');
  const analysis = holdLentBytes(image.subarray(10, 20))!;
  request.letGo();
  assert.equal(image.byteLength, 100 * KIB, 'still read by the analysis');
  assert.equal(image[5], 7);
  analysis();
  assert.equal(image.byteLength, 0, 'detached: freed');
  assert.equal(image.buffer.byteLength, 0);
  assert.equal(holdLentBytes(image), null, 'no longer lent; reads as empty');
});

test('bytes that are not the whole of a large buffer of their own are left to V8', () => {
  const large = Buffer.alloc(100 * KIB);
  assert.equal(freeWhenRead(large.subarray(1)), null, 'a slice');
  assert.equal(freeWhenRead(Buffer.alloc(16 * KIB)), null, 'below 64 KiB');
  assert.equal(freeWhenRead(new Uint8Array(new SharedArrayBuffer(100 * KIB))), null, 'shared memory');
  const lent = freeWhenRead(large)!;
  assert.equal(freeWhenRead(large), null, 'lent once');
  lent.letGo();
  assert.equal(large.byteLength, 0);
});

test("a gRPC message's buffer is freed when its images fill it but for the other fields' allowance", () => {
  const message = Buffer.alloc(300 * KIB);
  const parts = [message.subarray(100, 100 + 150 * KIB), message.subarray(200 * KIB, 299 * KIB)];
  assert.equal(freeMessageWhenRead(parts, 16 * KIB), null, 'more than 16 KiB besides the images');
  assert.equal(freeMessageWhenRead([parts[0]!, Buffer.alloc(100 * KIB)], 64 * KIB), null, 'parts in two buffers');
  const lent = freeMessageWhenRead(parts, 64 * KIB)!;
  assert.ok(lent);
  lent.letGo();
  assert.equal(message.byteLength, 0);
  assert.equal(parts[0]!.byteLength, 0);
});

test('a full collection after STEP_BYTES (4 MiB) of external growth from the low point, at most once per 10 s', () => {
  let external = 100 * KIB * KIB;
  let collected = 0;
  const looks = new ExternalCollections(
    () => external,
    () => {
      collected++;
      external -= STEP_BYTES; // what the collection freed
      const until = performance.now() + 2;
      while (performance.now() < until); // a collection's time
    },
  );
  external -= 10 * KIB * KIB; // a lower point: growth counts from here
  assert.equal(looks.look(0), false);
  external += STEP_BYTES - 1;
  assert.equal(looks.look(1000), false, 'one byte short');
  external += 1;
  assert.equal(looks.look(2000), true);
  assert.equal(collected, 1);
  external += 2 * STEP_BYTES;
  assert.equal(looks.look(2000 + MIN_GAP_MS - 1), false, 'too soon after the last');
  assert.equal(looks.look(2000 + MIN_GAP_MS), true);
  assert.equal(looks.collections(), 2);
  assert.ok(looks.seconds() >= 0.004, `the time in both counted: ${looks.seconds()} s`);
});
