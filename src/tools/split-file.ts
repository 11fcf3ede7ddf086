// Splits a file into parts of at most `partBytes` (FILE.part-00, FILE.part-01, ...) and removes it,
// writing FILE.sha256 (sha256sum's format) for the whole: `cat FILE.part-* > FILE` joins the parts
// again (the names sort in order) and `sha256sum -c FILE.sha256` checks the join. For the offline
// bundle on machines that take files of a limited size per transfer.
import { createHash } from 'node:crypto';
import { closeSync, openSync, readSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export function splitFile(file: string, partBytes: number): string[] {
  if (!Number.isInteger(partBytes) || partBytes < 1) throw new Error(`part size must be a positive number of bytes, got ${partBytes}`);
  const hash = createHash('sha256');
  const parts: string[] = [];
  const fd = openSync(file, 'r');
  try {
    const buffer = Buffer.alloc(Math.min(partBytes, 16 * 2 ** 20));
    for (let done = false; !done; ) {
      const part = `${file}.part-${String(parts.length).padStart(2, '0')}`;
      const out = openSync(part, 'w');
      let written = 0;
      try {
        while (written < partBytes) {
          const n = readSync(fd, buffer, 0, Math.min(buffer.length, partBytes - written), null);
          if (n === 0) {
            done = true;
            break;
          }
          writeFileSync(out, buffer.subarray(0, n));
          hash.update(buffer.subarray(0, n));
          written += n;
        }
      } finally {
        closeSync(out);
      }
      if (written > 0) parts.push(part);
      else rmSync(part);
    }
  } finally {
    closeSync(fd);
  }
  writeFileSync(`${file}.sha256`, `${hash.digest('hex')}  ${path.basename(file)}\n`);
  rmSync(file);
  return parts;
}
