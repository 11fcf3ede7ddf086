// A process's resident memory by kind of mapping, from /proc/<pid>/smaps (Linux):
// - arenas: glibc's thread arenas, heaps it maps at 64 MiB boundaries (HEAP_MAX_SIZE on 64-bit);
// - brk: the main arena's heap ([heap]);
// - stacks: anonymous regions right above a guard page (threads' stacks) and [stack];
// - files: mapped files (code, libraries, models read with mmap);
// - other: the rest of anonymous memory (V8's heaps of every isolate, large blocks malloc maps
//   on their own, the front's body slabs, ONNX Runtime's own mappings).
import { readFileSync } from 'node:fs';

export type MappingKind = 'arenas' | 'brk' | 'stacks' | 'files' | 'other';
export const MAPPING_KINDS: MappingKind[] = ['arenas', 'brk', 'stacks', 'files', 'other'];

export interface MemoryByKind {
  /** Resident KiB by kind. */
  rssKiB: Record<MappingKind, number>;
  /** glibc thread arenas' heaps mapped (one arena has one or more). */
  arenaHeaps: number;
  /** The largest arena heap's resident KiB. */
  largestArenaHeapKiB: number;
  totalKiB: number;
}

const ARENA_ALIGN = 64 * 2 ** 20;

interface Region {
  start: bigint;
  end: bigint;
  perms: string;
  name: string;
  rssKiB: number;
}

function regions(text: string): Region[] {
  const out: Region[] = [];
  for (const line of text.split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      out.push({ start: BigInt(`0x${head[1]}`), end: BigInt(`0x${head[2]}`), perms: head[3]!, name: head[4]!, rssKiB: 0 });
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && out.length > 0) out[out.length - 1]!.rssKiB = Number(rss[1]);
  }
  return out;
}

function kindOf(r: Region, below: Region | undefined): MappingKind {
  if (r.name === '[heap]') return 'brk';
  if (r.name === '[stack]') return 'stacks';
  if (r.name.startsWith('/') || r.name.startsWith('[') || r.name.startsWith('anon_inode')) return r.name.startsWith('/') ? 'files' : 'other';
  if (r.start % BigInt(ARENA_ALIGN) === 0n && r.end - r.start <= BigInt(ARENA_ALIGN)) return 'arenas';
  if (below && below.end === r.start && below.perms.startsWith('---') && below.end - below.start <= 65536n && below.name === '') return 'stacks';
  return 'other';
}

/** Reads /proc/<pid>/smaps once. */
export function memoryByKind(pid: number): MemoryByKind {
  const all = regions(readFileSync(`/proc/${pid}/smaps`, 'utf8'));
  const rssKiB: Record<MappingKind, number> = { arenas: 0, brk: 0, stacks: 0, files: 0, other: 0 };
  let arenaHeaps = 0;
  let largestArenaHeapKiB = 0;
  all.forEach((r, i) => {
    const kind = kindOf(r, all[i - 1]);
    rssKiB[kind] += r.rssKiB;
    if (kind === 'arenas') {
      arenaHeaps++;
      largestArenaHeapKiB = Math.max(largestArenaHeapKiB, r.rssKiB);
    }
  });
  return { rssKiB, arenaHeaps, largestArenaHeapKiB, totalKiB: MAPPING_KINDS.reduce((n, k) => n + rssKiB[k], 0) };
}

/** Resident KiB of the whole process, from /proc/<pid>/smaps_rollup (the same sum, cheaper). */
export function residentKiB(pid: number): number {
  const rss = /^Rss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
  if (!rss) throw new Error(`no Rss line in /proc/${pid}/smaps_rollup`);
  return Number(rss[1]);
}
