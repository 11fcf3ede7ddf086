// GPU code of chosen architectures only (src/tools/cuda-fatbin.ts): on a small ELF file built here
// with a known .nv_fatbin, and on the installed CUDA provider library when the optional GPU package is
// there. Whether the CUDA runtime accepts the result can only be seen on a GPU (bench/README.md).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { elfSection, FatbinError, fatbinArchitectures, parseArchitecture, pruneFatbin, readFatbin } from '../src/tools/cuda-fatbin';
import { repoRoot } from './helpers/paths';

interface Entry {
  arch: number;
  payload: Buffer;
}

function entry({ arch, payload }: Entry): Buffer {
  const padded = Math.ceil(payload.length / 8) * 8;
  const header = Buffer.alloc(64);
  header.writeUInt16LE(2, 0); // ELF
  header.writeUInt16LE(0x0101, 2);
  header.writeUInt32LE(64, 4);
  header.writeBigUInt64LE(BigInt(padded), 8);
  header.writeUInt32LE(payload.length, 16);
  header.writeUInt32LE(arch, 28);
  return Buffer.concat([header, payload, Buffer.alloc(padded - payload.length)]);
}

function container(entries: Entry[]): Buffer {
  const body = Buffer.concat(entries.map(entry));
  const header = Buffer.alloc(16);
  header.writeUInt32LE(0xba55ed50, 0);
  header.writeUInt16LE(1, 4);
  header.writeUInt16LE(16, 6);
  header.writeBigUInt64LE(BigInt(body.length), 8);
  return Buffer.concat([header, body]);
}

/** An ELF64 file: 64-byte header, `before`, the .nv_fatbin bytes, `after`, names, section table. */
function elf(fatbin: Buffer, before = Buffer.from('host code before'), after = Buffer.from('host data after')): Buffer {
  const names = Buffer.from('\0.shstrtab\0.nv_fatbin\0');
  const fatbinAt = 64 + before.length;
  const namesAt = fatbinAt + fatbin.length + after.length;
  const tableAt = namesAt + names.length;
  const head = Buffer.alloc(64);
  head.writeUInt32BE(0x7f454c46, 0);
  head[4] = 2; // 64-bit
  head[5] = 1; // little-endian
  head.writeBigUInt64LE(BigInt(tableAt), 0x28);
  head.writeUInt16LE(64, 0x3a);
  head.writeUInt16LE(3, 0x3c);
  head.writeUInt16LE(1, 0x3e);
  const table = Buffer.alloc(3 * 64);
  const section = (index: number, name: number, offset: number, size: number) => {
    table.writeUInt32LE(name, index * 64);
    table.writeBigUInt64LE(BigInt(offset), index * 64 + 0x18);
    table.writeBigUInt64LE(BigInt(size), index * 64 + 0x20);
  };
  section(1, 1, namesAt, names.length);
  section(2, 11, fatbinAt, fatbin.length);
  return Buffer.concat([head, before, fatbin, after, names, table]);
}

const payload = (text: string) => Buffer.from(text.repeat(5));

test('pruning keeps the chosen architectures in place and zeroes the rest', () => {
  const first = container([
    { arch: 80, payload: payload('eighty ') },
    { arch: 90, payload: payload('ninety ') },
    { arch: 120, payload: payload('one-twenty ') },
  ]);
  const onlyBlackwell = container([{ arch: 120, payload: payload('only 120 ') }]);
  const file = elf(Buffer.concat([first, onlyBlackwell]));
  const original = Buffer.from(file);
  const range = elfSection(file, '.nv_fatbin')!;
  assert.deepEqual(fatbinArchitectures(file), [80, 90, 120]);

  const report = pruneFatbin(file, new Set([90]));
  assert.deepEqual(report, { containers: 2, kept: 1, dropped: 2, untouched: 1, freedBytes: first.length - 16 - entry({ arch: 90, payload: payload('ninety ') }).length });
  assert.equal(file.length, original.length);
  assert.ok(file.subarray(0, range.offset).equals(original.subarray(0, range.offset)), 'bytes before the section are unchanged');
  assert.ok(file.subarray(range.offset + range.size).equals(original.subarray(range.offset + range.size)), 'bytes after the section are unchanged');

  const section = file.subarray(range.offset, range.offset + range.size);
  const [pruned, untouched] = readFatbin(section);
  assert.deepEqual(pruned!.entries.map((e) => e.arch), [90]);
  assert.equal(pruned!.start, 0);
  const kept = pruned!.entries[0]!;
  assert.ok(section.subarray(kept.start + 64, kept.start + 64 + 35).equals(payload('ninety ')), 'the kept payload is intact');
  assert.ok(section.subarray(pruned!.start + pruned!.length, first.length).every((b) => b === 0), 'the freed tail is zeros');
  assert.equal(untouched!.start, first.length, 'the next container has not moved');
  assert.ok(section.subarray(first.length).equals(onlyBlackwell), 'a container without sm_90 stays whole');
  assert.deepEqual(fatbinArchitectures(file), [90, 120]);

  const again = Buffer.from(file);
  pruneFatbin(again, new Set([90]));
  assert.ok(again.equals(file), 'pruning is idempotent');
});

test('malformed libraries and architecture names are refused with a reason', () => {
  assert.throws(() => fatbinArchitectures(Buffer.from('#!/bin/sh\n'.repeat(10))), FatbinError);
  const good = container([{ arch: 90, payload: payload('x') }]);
  const overlong = Buffer.from(good);
  overlong.writeBigUInt64LE(BigInt(good.length), 8); // claims more entries than the section holds
  assert.throws(() => fatbinArchitectures(elf(overlong)), /runs past the section/);
  const badEntry = Buffer.from(good);
  badEntry.writeBigUInt64LE(4096n, 16 + 8); // an entry longer than its container
  assert.throws(() => fatbinArchitectures(elf(badEntry)), /runs past its container/);
  assert.throws(() => fatbinArchitectures(elf(Buffer.concat([good, Buffer.from('junk between containers')]))), /no fatbin container/);
  assert.throws(() => pruneFatbin(elf(Buffer.alloc(0)).subarray(0, 64 + 16), new Set([90])), FatbinError);

  assert.equal(parseArchitecture('sm_90'), 90);
  assert.equal(parseArchitecture('SM89'), 89);
  assert.equal(parseArchitecture('120'), 120);
  for (const bad of ['hopper', 'sm_9', 'compute_90', '90a']) assert.throws(() => parseArchitecture(bad), /not a GPU architecture/);
});

const cudaLibrary = path.join(repoRoot, 'build/Release/libonnxruntime_providers_cuda.so');

test('the installed CUDA provider cut to sm_90 has only sm_90 code and the same bytes outside .nv_fatbin', { skip: !existsSync(cudaLibrary) && 'the optional GPU package is not installed' }, () => {
  const file = readFileSync(cudaLibrary);
  const original = Buffer.from(file);
  const range = elfSection(file, '.nv_fatbin')!;
  assert.ok(fatbinArchitectures(file).includes(90));
  const report = pruneFatbin(file, new Set([90]));
  assert.ok(report.dropped > 0 && report.kept > 0);
  assert.ok(file.subarray(0, range.offset).equals(original.subarray(0, range.offset)));
  assert.ok(file.subarray(range.offset + range.size).equals(original.subarray(range.offset + range.size)));
  const containers = readFatbin(file.subarray(range.offset, range.offset + range.size));
  for (const c of containers) {
    const archs = new Set(c.entries.map((e) => e.arch));
    assert.ok(archs.has(90) ? archs.size === 1 : true, `container at ${c.start}: ${[...archs].join(', ')}`);
  }
  assert.equal(containers.filter((c) => !c.entries.some((e) => e.arch === 90)).length, report.untouched);
});

test('npm run bundle refuses an architecture the CUDA library has no code for, before writing anything', { skip: !existsSync(cudaLibrary) && 'the optional GPU package is not installed' }, () => {
  const run = (arch: string) => {
    try {
      execFileSync(process.execPath, [path.join(repoRoot, 'dist/src/tools/bundle.js'), '--cuda-arch', arch, '--out', '/nonexistent/never-written.tar.xz'], { stdio: 'pipe' });
      return '';
    } catch (error) {
      return String((error as { stderr: Buffer }).stderr);
    }
  };
  assert.match(run('sm_61'), /--cuda-arch: libonnxruntime_providers_cuda\.so has no code for sm_61; it has sm_\d+(, sm_\d+)*/);
  assert.match(run('volta'), /--cuda-arch: "volta" is not a GPU architecture/);
});
