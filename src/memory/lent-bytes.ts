// Bytes lent by the memory's owner (a front's body slab: front/body-slab.ts) rather than
// owned by the JavaScript that reads them. A lent range stays valid while anyone holds it; once the
// last holder lets go, its owner may write other bytes there. So whatever reads lent bytes after the
// code that received them has moved on (an analysis in the addon, a shadow's after the answer) holds
// them first: holdLentBytes.
// The same holds for image bytes in the main thread's own memory that are freed once read
// (lendOwnMemory, from native/own-memory.ts: a gRPC message, a scan's image): left to V8, such
// buffers wait for a full collection of the main thread, which came every 2-3 minutes under a
// mixed load and freed 40-70 MiB at once (docs/operations.md "Memory").

/** One lent range of a shared memory, held by its receiver until it lets go. */
export class LentRange {
  private holders = 1;

  constructor(
    readonly bytes: Buffer,
    private readonly giveBack: (range: LentRange) => void,
  ) {}

  /** Another holder; the returned function lets go (once). */
  hold(): () => void {
    this.holders++;
    let held = true;
    return () => {
      if (held) this.letGo();
      held = false;
    };
  }

  /** The receiver's own hold ends. */
  letGo(): void {
    if (--this.holders === 0) this.giveBack(this);
  }

  contains(bytes: Uint8Array): boolean {
    return bytes.byteOffset >= this.bytes.byteOffset && bytes.byteOffset + bytes.byteLength <= this.bytes.byteOffset + this.bytes.byteLength;
  }
}

/** The ranges lent now, by their memory. */
const lentNow = new WeakMap<ArrayBufferLike, Set<LentRange>>();
let lentTotal = 0;

/** Bytes lent now, all memories together. */
export function lentBytes(): number {
  return lentTotal;
}

/** `length` bytes at `offset` of `memory`, lent until their last holder lets go; then `giveBack`. */
export function lendRange(memory: SharedArrayBuffer, offset: number, length: number, giveBack: () => void): LentRange {
  let ranges = lentNow.get(memory);
  if (!ranges) lentNow.set(memory, (ranges = new Set()));
  const lent = ranges;
  const range = new LentRange(Buffer.from(memory, offset, length), (done) => {
    lent.delete(done);
    lentTotal -= length;
    giveBack();
  });
  lent.add(range);
  lentTotal += length;
  return range;
}

/** Buffers below this size are left to V8: Node's pool of small buffers is shared, and they matter little. */
export const OWN_MEMORY_MIN_BYTES = 64 * 1024;

/**
 * The whole of `buffer` (memory of the main thread's own, e.g. a gRPC message that holds an image),
 * held by the caller until it lets go; once every holder has, `release` frees it (the addon's
 * releaseArrayBuffer). Null, and nothing freed, for a buffer below OWN_MEMORY_MIN_BYTES. Only for a
 * buffer nothing else reads after its holders let go: its views read as empty afterwards.
 */
export function lendOwnMemory(buffer: ArrayBuffer, release: (buffer: ArrayBuffer) => void): LentRange | null {
  if (buffer.byteLength < OWN_MEMORY_MIN_BYTES || lentNow.has(buffer)) return null;
  const range = new LentRange(Buffer.from(buffer), () => {
    lentNow.delete(buffer);
    release(buffer);
  });
  lentNow.set(buffer, new Set([range]));
  return range;
}

/**
 * Holds the lent range `bytes` lie in until the returned function is called; null when they are not
 * lent (ordinary memory). Throws when they are in lent memory but no longer lent: reading them would
 * read whatever the owner has written there since.
 */
export function holdLentBytes(bytes: string | Uint8Array): (() => void) | null {
  if (typeof bytes === 'string') return null;
  const ranges = lentNow.get(bytes.buffer);
  if (!ranges) return null;
  for (const range of ranges) if (range.contains(bytes)) return range.hold();
  throw new Error('lent bytes read after they were given back');
}
