// bin/catcomfort-service, the one place that holds the service's Node.js settings (`npm start`,
// the bundle's `run`, the images, the benchmark): it runs the Node.js CATCOMFORT_NODE names with
// them and the compiled service, from any working folder. The bundle test starts it for real.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';

const root = path.resolve(__dirname, '../..');
const launcher = path.join(root, 'bin/catcomfort-service');

test('the service launcher runs the named Node.js with the V8 settings and the compiled service', () => {
  // A Node.js stand-in that prints what it was given.
  const said = execFileSync(launcher, ['--extra'], { cwd: os.tmpdir(), env: { PATH: process.env.PATH, CATCOMFORT_NODE: '/bin/echo' }, encoding: 'utf8' });
  assert.equal(said.trim(), `--initial-old-space-size=128 ${path.join(root, 'dist/src/main.js')} --extra`);
  const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  assert.equal(pkg.scripts.start, 'bin/catcomfort-service');
});
