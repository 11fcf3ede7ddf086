// The x86 vector features of this machine that decide how int8 runs (Linux /proc/cpuinfo flags):
// named in the int8 self-check's log line, /v2/stats and every bench figure. Without VNNI, u8 x s8
// int8 kernels add pairs into saturating 16-bit lanes (src/graphs/quantize/qdq.ts, WEIGHT_QMAX).
import { readFileSync } from 'node:fs';

/** /proc/cpuinfo flag -> the name we print, in the order printed. */
const FEATURES: Array<[flag: string, name: string]> = [
  ['avx2', 'AVX2'],
  ['avx512f', 'AVX-512'],
  ['avx512_vnni', 'AVX-512 VNNI'],
  ['avx_vnni', 'AVX-VNNI'],
  ['amx_int8', 'AMX-INT8'],
];

let cached: string[] | undefined;

/** The features present, e.g. ['AVX2', 'AVX-512', 'AVX-512 VNNI']; [] where cpuinfo has no x86 flags. */
export function cpuFeatures(cpuinfo?: string): string[] {
  if (cpuinfo === undefined && cached) return cached;
  let text = cpuinfo;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/cpuinfo', 'utf8');
    } catch {
      text = '';
    }
  }
  const line = text.split('\n').find((l) => /^flags\s*:/.test(l)) ?? '';
  const flags = new Set(line.replace(/^flags\s*:/, '').trim().split(/\s+/));
  const found = FEATURES.filter(([flag]) => flags.has(flag)).map(([, name]) => name);
  if (cpuinfo === undefined) cached = found;
  return found;
}
