// Bodies lent from a front's slab (src/front/body-slab.ts, src/memory/lent-bytes.ts), both sides in
// one process: the main thread sees the bytes the thread wrote; a block is not placed again while the
// request or an analysis of it holds it, and is once both have let go; a block never lent comes back
// at once; a full slab places nothing; lent bytes read after they came back throw; the service
// (src/front/service-side.ts) holds a request's body until its answer.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createSlab, SLAB_BYTES, SlabReader, SlabWriter } from '../src/front/body-slab';
import { ServiceSide } from '../src/front/service-side';
import type { ResponseSink } from '../src/http/exchange';
import { packHead } from '../src/http/request-head';
import { holdLentBytes, lentBytes } from '../src/memory/lent-bytes';

test('a lent block is seen as written, and placed again only once every holder has let go', () => {
  const slab = createSlab(4);
  const writer = new SlabWriter(slab);
  const reader = new SlabReader(slab);
  const block = writer.place(1000)!;
  writer.bytes(block).fill(7);
  writer.lend(block);
  const body = reader.borrow(block);
  assert.equal(lentBytes(), 1000);
  assert.deepEqual(body.bytes, Buffer.alloc(1000, 7));
  const analysis = holdLentBytes(body.bytes.subarray(10, 20))!;
  assert.equal(typeof analysis, 'function');
  body.letGo(); // the request ended; the analysis still reads
  assert.equal(writer.place(SLAB_BYTES), null, 'the held block was taken back');
  assert.equal(writer.place(100)!.offset, 1000, 'placed over the held block');
  analysis();
  analysis(); // once only
  assert.equal(lentBytes(), 0);
  assert.equal(writer.place(900)!.offset, 0, 'the block given back is placed again');
  assert.throws(() => holdLentBytes(body.bytes), /after they were given back/);
  assert.equal(holdLentBytes(Buffer.alloc(10)), null);
});

test('a block never lent comes back at once; a full slab, or one out of blocks, places nothing', () => {
  const slab = createSlab(1);
  const writer = new SlabWriter(slab);
  const half = writer.place(SLAB_BYTES / 2)!;
  assert.ok(writer.place(SLAB_BYTES / 2));
  assert.equal(writer.place(1), null);
  writer.free(half);
  assert.equal(writer.place(SLAB_BYTES / 2)!.offset, 0);
  const small = new SlabWriter(createSlab(1));
  const placed = Array.from({ length: slab.blocks + 1 }, () => small.place(1));
  assert.equal(placed.filter((b) => b !== null).length, slab.blocks);
});

test('the service holds a request\'s body until its answer', () => {
  const slab = createSlab(4);
  const writer = new SlabWriter(slab);
  const held: ResponseSink[] = [];
  const side = new ServiceSide({
    slab,
    post: () => undefined,
    serve: (res) => void held.push(res),
    carryLines: false,
  });
  const block = writer.place(64)!;
  writer.lend(block);
  side.receive({ type: 'request', id: 1, head: packHead('POST', '/v2/predict', [], '127.0.0.1'), startedAt: performance.timeOrigin, body: [block.block, block.offset, block.length, -1, -1] });
  assert.equal(held.length, 1, 'served');
  assert.notEqual(writer.place(64)!.offset, block.offset, 'the block is still lent');
  held[0]!.answer('200 OK', '', '', false);
  assert.equal(lentBytes(), 0);
});
