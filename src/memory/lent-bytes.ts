// Bytes lent by the memory's owner (a front's body slab: front/body-slab.ts) rather than
// owned by the JavaScript that reads them. A lent range stays valid while anyone holds it; once the
// last holder lets go, its owner may write other bytes there. So whatever reads lent bytes after the
// code that received them has moved on (an analysis in the addon, a shadow's after the answer) holds
// them first: holdLentBytes.

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
const lentNow = new WeakMap<SharedArrayBuffer, Set<LentRange>>();
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

/**
 * Holds the lent range `bytes` lie in until the returned function is called; null when they are not
 * lent (ordinary memory). Throws when they are in lent memory but no longer lent: reading them would
 * read whatever the owner has written there since.
 */
export function holdLentBytes(bytes: string | Uint8Array): (() => void) | null {
  if (typeof bytes === 'string' || !(bytes.buffer instanceof SharedArrayBuffer)) return null;
  const ranges = lentNow.get(bytes.buffer);
  if (!ranges) return null;
  for (const range of ranges) if (range.contains(bytes)) return range.hold();
  throw new Error('lent bytes read after they were given back');
}
