// The offline bundle's --split (src/tools/split-file.ts): parts of at most the size asked, which
// `cat FILE.part-*` joins back into the same bytes, and a FILE.sha256 that sha256sum checks.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { splitFile } from '../src/tools/split-file';

test('splitFile: parts of at most N bytes that cat joins into the original; sha256sum -c checks the join', () => {
  for (const [size, part] of [[10_000, 4096], [8192, 4096], [100, 1000]] as const) {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'cc-split-'));
    const file = path.join(dir, 'archive.tar.xz');
    const data = randomBytes(size);
    writeFileSync(file, data);
    const parts = splitFile(file, part);
    assert.equal(parts.length, Math.ceil(size / part), `${size} in parts of ${part}`);
    assert.ok(parts.every((p) => statSync(p).size <= part));
    assert.equal(existsSync(file), false, 'the whole archive is replaced by its parts');
    assert.deepEqual(readdirSync(dir).sort(), [...parts.map((p) => path.basename(p)), 'archive.tar.xz.sha256'].sort());
    execFileSync('sh', ['-c', 'cat archive.tar.xz.part-* > archive.tar.xz && sha256sum -c archive.tar.xz.sha256'], { cwd: dir, stdio: 'pipe' });
  }
  assert.throws(() => splitFile('/nonexistent', 0), /positive number of bytes/);
});
