// bin/catcomfort-service, the one place that holds the service's Node.js settings (`npm start`,
// the bundle's `run`, the images, the benchmark): it runs the compiled service with them, with the
// bundle's own Node.js where app/ has one beside it, else `node` from PATH, from any working folder.
// The bundle test starts it for real.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { repoRoot as root } from './helpers/paths';



/** An executable stand-in for Node.js that prints who it is and what it was given. */
function fakeNode(file: string, name: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `#!/bin/sh\necho ${name} "$@"\n`);
  chmodSync(file, 0o755);
}

test('the service launcher runs the bundle\'s Node.js, else PATH\'s, with the V8 settings and the compiled service', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cc-launcher-'));
  try {
    // The bundle's layout (top/node/bin/node beside top/app/), and a checkout's (nothing beside it).
    const placed = (app: string) => {
      mkdirSync(path.join(app, 'bin'), { recursive: true });
      copyFileSync(path.join(root, 'bin/catcomfort-service'), path.join(app, 'bin/catcomfort-service'));
      return path.join(app, 'bin/catcomfort-service');
    };
    const app = path.join(dir, 'top/app');
    const checkout = path.join(dir, 'work/checkout');
    placed(app);
    placed(checkout);
    fakeNode(path.join(dir, 'top/node/bin/node'), 'bundled');
    fakeNode(path.join(dir, 'path/node'), 'from-path');
    const env = { PATH: `${path.join(dir, 'path')}:/usr/bin:/bin` };
    const run = (launcher: string) => execFileSync(launcher, ['--extra'], { cwd: os.tmpdir(), env, encoding: 'utf8' }).trim();
    assert.equal(run(path.join(app, 'bin/catcomfort-service')), `bundled --initial-old-space-size=128 ${path.join(app, 'dist/src/main.js')} --extra`);
    assert.equal(run(path.join(checkout, 'bin/catcomfort-service')), `from-path --initial-old-space-size=128 ${path.join(checkout, 'dist/src/main.js')} --extra`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  assert.equal(pkg.scripts.start, 'bin/catcomfort-service');
});
