// Memory shared by one front and the main thread for request bodies (service-link.ts). The
// thread writes each body into a block of the slab and lends it; the main thread views it in place
// (no copy, and no ArrayBuffer per body, whose external memory V8 collects for). The main thread
// gives a block back once its exchange has ended and no analysis reads it (memory/lent-bytes.ts)
// by clearing the block's flag; the thread takes the block again once it sees the flag clear.
import { lendRange, type LentRange } from '../memory/lent-bytes';

/** Body bytes one front holds in its slab at most, lent or arriving; a body that does not fit gets memory of its own (service-link.ts). */
export const SLAB_BYTES = 64 * 1024 * 1024;

/** Blocks start on 8-byte boundaries. */
const ALIGN = 8;

/** One slab: a flag per block (1: lent) before the body bytes. */
export interface Slab {
  memory: SharedArrayBuffer;
  blocks: number;
}

/** A slab for a front with at most `requests` requests at once; as many again may still be lent after their answers. */
export function createSlab(requests: number): Slab {
  const blocks = 2 * requests + 16;
  return { memory: new SharedArrayBuffer(dataStart(blocks) + SLAB_BYTES), blocks };
}

function dataStart(blocks: number): number {
  return Math.ceil((blocks * 4) / ALIGN) * ALIGN;
}

/** Where a body lies in its thread's slab: a block's flag index, offset (from the bytes' start) and length. */
export interface SlabBlock {
  block: number;
  offset: number;
  length: number;
}

interface Placed extends SlabBlock {
  lent: boolean;
}

/** The thread's side: places bodies, and takes back the blocks the main thread has cleared. */
export class SlabWriter {
  private readonly flags: Int32Array;
  private readonly base: number;
  /** Blocks in use, by offset. */
  private readonly placed: Placed[] = [];
  private readonly unused: number[];

  constructor(private readonly slab: Slab) {
    this.flags = new Int32Array(slab.memory, 0, slab.blocks);
    this.base = dataStart(slab.blocks);
    this.unused = Array.from({ length: slab.blocks }, (_, i) => slab.blocks - 1 - i);
  }

  /** A block of `length` bytes, or null when none fits. */
  place(length: number): SlabBlock | null {
    const index = this.slotFor(length);
    if (index < 0) return null;
    const offset = index === 0 ? 0 : end(this.placed[index - 1]!);
    const block: Placed = { block: this.unused.pop()!, offset, length, lent: false };
    this.placed.splice(index, 0, block);
    return block;
  }

  /** The block's bytes, to write the body into. */
  bytes(block: SlabBlock): Buffer {
    return Buffer.from(this.slab.memory, this.base + block.offset, block.length);
  }

  /** The block goes to the main thread, which gives it back by clearing its flag. */
  lend(block: SlabBlock): void {
    (block as Placed).lent = true;
    Atomics.store(this.flags, block.block, 1);
  }

  /** A block never lent is free again at once. */
  free(block: SlabBlock): void {
    if ((block as Placed).lent) return;
    const index = this.placed.indexOf(block as Placed);
    if (index >= 0) this.remove(index);
  }

  /** Where in `placed` a body of `length` bytes would go now, blocks taken back first; -1: no block or no room. */
  private slotFor(length: number): number {
    this.takeBack();
    return this.unused.length > 0 ? this.gapFor(length) : -1;
  }

  /** Where in `placed` a body of `length` bytes goes (first fit), or -1. */
  private gapFor(length: number): number {
    let from = 0;
    for (let i = 0; i < this.placed.length; i++) {
      if (this.placed[i]!.offset - from >= length) return i;
      from = end(this.placed[i]!);
    }
    return SLAB_BYTES - from >= length ? this.placed.length : -1;
  }

  private takeBack(): void {
    for (let i = this.placed.length - 1; i >= 0; i--) {
      const block = this.placed[i]!;
      if (block.lent && Atomics.load(this.flags, block.block) === 0) this.remove(i);
    }
  }

  private remove(index: number): void {
    const [block] = this.placed.splice(index, 1);
    this.unused.push(block!.block);
  }
}

function end(block: SlabBlock): number {
  return block.offset + Math.ceil(block.length / ALIGN) * ALIGN;
}

/** The main thread's side: a lent block's bytes, held until the last holder lets go, then its flag cleared. */
export class SlabReader {
  private readonly flags: Int32Array;
  private readonly base: number;

  constructor(private readonly slab: Slab) {
    this.flags = new Int32Array(slab.memory, 0, slab.blocks);
    this.base = dataStart(slab.blocks);
  }

  borrow(block: SlabBlock): LentRange {
    return lendRange(this.slab.memory, this.base + block.offset, block.length, () => Atomics.store(this.flags, block.block, 0));
  }
}
