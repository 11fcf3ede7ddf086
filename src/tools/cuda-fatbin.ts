// GPU code of chosen architectures only, for `npm run bundle -- --cuda-arch ...`. A CUDA library
// keeps its kernels in the ELF section .nv_fatbin: a run of containers (16-byte header: magic
// 0xBA55ED50, u16 version, u16 header size, u64 size of the entries), each holding one entry per
// GPU architecture (a header with u16 kind at 0, u32 header size at 4, u64 padded payload size at
// 8, u32 SM architecture at 28, then the payload). The CUDA runtime finds each container by its
// address and walks its entries by the header's size. Pruning rewrites each container in place:
// the kept entries moved to its front, the size lowered, the freed tail zeroed. No address
// changes, so the ELF stays valid, and the zeros compress to almost nothing. A container with no
// entry of a chosen architecture is left whole (the original library could not run it there either).

const CONTAINER_MAGIC = 0xba55ed50;
const CONTAINER_HEADER = 16;
const ENTRY_HEADER_MIN = 64;
const MAGIC_BYTES = Buffer.from([0x50, 0xed, 0x55, 0xba]);
const ZEROS = Buffer.alloc(1 << 20);

export interface FatbinEntry {
  kind: number; // 1: PTX, 2: ELF (cubin)
  arch: number; // SM architecture, e.g. 90 for sm_90
  start: number; // offset of the entry header in the section
  length: number; // header + padded payload
}

export interface FatbinContainer {
  start: number; // offset in the section
  length: number; // header + entries
  entries: FatbinEntry[];
}

export interface PruneReport {
  containers: number;
  kept: number; // entries kept
  dropped: number; // entries zeroed
  untouched: number; // containers without an entry of a chosen architecture
  freedBytes: number;
}

export class FatbinError extends Error {}

/** The file range of an ELF64 little-endian section, or null when the file has no such section. */
export function elfSection(file: Buffer, name: string): { offset: number; size: number } | null {
  if (file.length < 64 || file.readUInt32BE(0) !== 0x7f454c46) throw new FatbinError('not an ELF file');
  if (file[4] !== 2 || file[5] !== 1) throw new FatbinError('not a 64-bit little-endian ELF file');
  const table = Number(file.readBigUInt64LE(0x28));
  const entrySize = file.readUInt16LE(0x3a);
  const count = file.readUInt16LE(0x3c);
  const names = table + file.readUInt16LE(0x3e) * entrySize;
  if (entrySize < 64 || table + count * entrySize > file.length) throw new FatbinError('ELF section table out of range');
  const namesOffset = Number(file.readBigUInt64LE(names + 0x18));
  for (let i = 0; i < count; i++) {
    const at = table + i * entrySize;
    const nameStart = namesOffset + file.readUInt32LE(at);
    const nameEnd = file.indexOf(0, nameStart);
    if (nameEnd < 0 || file.toString('latin1', nameStart, nameEnd) !== name) continue;
    const offset = Number(file.readBigUInt64LE(at + 0x18));
    const size = Number(file.readBigUInt64LE(at + 0x20));
    if (offset + size > file.length) throw new FatbinError(`${name} runs past the end of the file`);
    return { offset, size };
  }
  return null;
}

function allZero(buffer: Buffer, start: number, end: number): boolean {
  for (let at = start; at < end; at += ZEROS.length) {
    const chunk = buffer.subarray(at, Math.min(end, at + ZEROS.length));
    if (!chunk.equals(ZEROS.subarray(0, chunk.length))) return false;
  }
  return true;
}

/** Every container of a .nv_fatbin section, with its entries; throws on anything malformed. */
export function readFatbin(section: Buffer): FatbinContainer[] {
  const containers: FatbinContainer[] = [];
  let at = 0;
  while (at < section.length) {
    if (at + CONTAINER_HEADER > section.length || section.readUInt32LE(at) !== CONTAINER_MAGIC) {
      // A pruned container is followed by zeros up to the next one; anything else is not understood.
      const next = section.indexOf(MAGIC_BYTES, at);
      const gapEnd = next < 0 ? section.length : next;
      if (!allZero(section, at, gapEnd)) throw new FatbinError(`no fatbin container at offset ${at}`);
      at = gapEnd;
      continue;
    }
    const headerSize = section.readUInt16LE(at + 6);
    const end = at + headerSize + Number(section.readBigUInt64LE(at + 8));
    if (headerSize < CONTAINER_HEADER || end > section.length) throw new FatbinError(`fatbin container at offset ${at} runs past the section`);
    const entries: FatbinEntry[] = [];
    for (let entry = at + headerSize; entry < end; ) {
      const entryHeader = entry + ENTRY_HEADER_MIN <= end ? section.readUInt32LE(entry + 4) : 0;
      const length = entryHeader + Number(entry + 16 <= end ? section.readBigUInt64LE(entry + 8) : 0n);
      if (entryHeader < ENTRY_HEADER_MIN || entry + length > end) throw new FatbinError(`fatbin entry at offset ${entry} runs past its container`);
      entries.push({ kind: section.readUInt16LE(entry), arch: section.readUInt32LE(entry + 28), start: entry, length });
      entry += length;
    }
    containers.push({ start: at, length: end - at, entries });
    at = end;
  }
  return containers;
}

/** The SM architectures with code in the library, ascending. */
export function fatbinArchitectures(file: Buffer): number[] {
  const section = elfSection(file, '.nv_fatbin');
  if (!section) return [];
  const archs = new Set<number>();
  for (const c of readFatbin(file.subarray(section.offset, section.offset + section.size))) for (const e of c.entries) archs.add(e.arch);
  return [...archs].sort((a, b) => a - b);
}

/** Keeps only the entries of `keep` architectures, in place (see the top of this file). */
export function pruneFatbin(file: Buffer, keep: ReadonlySet<number>): PruneReport {
  const range = elfSection(file, '.nv_fatbin');
  if (!range) throw new FatbinError('the library has no .nv_fatbin section (no GPU code)');
  const section = file.subarray(range.offset, range.offset + range.size);
  const report: PruneReport = { containers: 0, kept: 0, dropped: 0, untouched: 0, freedBytes: 0 };
  for (const container of readFatbin(section)) {
    report.containers++;
    const kept = container.entries.filter((e) => keep.has(e.arch));
    if (kept.length === 0) {
      report.untouched++;
      continue;
    }
    const headerSize = section.readUInt16LE(container.start + 6);
    const pieces = kept.map((e) => Buffer.from(section.subarray(e.start, e.start + e.length)));
    let at = container.start + headerSize;
    for (const piece of pieces) at += piece.copy(section, at);
    section.writeBigUInt64LE(BigInt(at - container.start - headerSize), container.start + 8);
    section.fill(0, at, container.start + container.length);
    report.kept += kept.length;
    report.dropped += container.entries.length - kept.length;
    report.freedBytes += container.start + container.length - at;
  }
  return report;
}

/** "90", "sm_90", "sm90" -> 90; throws on anything else. */
export function parseArchitecture(text: string): number {
  const match = /^(?:sm_?)?(\d{2,3})$/i.exec(text.trim());
  if (!match) throw new FatbinError(`"${text}" is not a GPU architecture (e.g. sm_90 or 90)`);
  return Number(match[1]);
}
