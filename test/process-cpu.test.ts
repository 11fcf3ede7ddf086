// bench/process-cpu.ts: a server's CPU is its whole process tree's, as the serving-overhead table
// reads it (bench/overhead.ts): a grandchild's CPU counts while it lives and after its parent
// waited for it, and another process's does not.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'node:test';
import { processTreeCpuS } from '../bench/process-cpu';
import { waitFor } from './helpers/wait';

// The child starts a grandchild that spins until it has used 0.4 s of CPU, says so, and idles
// until killed; the child reports when it has waited for it, and ends both when its stdin closes.
const CHILD = `
const { spawn } = require('node:child_process');
const burner = spawn(process.execPath, ['-e', \`
  while (process.cpuUsage().user + process.cpuUsage().system < 400000) {}
  console.log('burnt');
  setInterval(() => {}, 1000);
\`], { stdio: ['ignore', 'inherit', 'inherit'] });
burner.on('exit', () => console.log('reaped'));
process.stdin.on('data', () => burner.kill());
process.stdin.on('end', () => { burner.kill(); process.exit(); });
`;

test('a process tree\'s CPU counts a busy grandchild, alive and once waited for; another tree\'s does not', async () => {
  const child = spawn(process.execPath, ['-e', CHILD], { stdio: ['pipe', 'pipe', 'inherit'] });
  const other = spawn('sleep', ['60'], { stdio: 'ignore' });
  let said = '';
  child.stdout!.on('data', (chunk: Buffer) => (said += chunk.toString()));
  try {
    await waitFor('the grandchild to burn 0.4 s of CPU', () => said.includes('burnt'));
    const alive = processTreeCpuS(child.pid!);
    assert.ok(alive >= 0.4, `tree CPU ${alive} s`);
    const unrelated = processTreeCpuS(other.pid!);
    assert.ok(unrelated < 0.1, `the other tree ${unrelated} s`);
    child.stdin!.write('stop\n');
    await waitFor('the child to wait for the grandchild', () => said.includes('reaped'));
    const reaped = processTreeCpuS(child.pid!);
    assert.ok(reaped >= 0.4, `tree CPU after the reap ${reaped} s`);
  } finally {
    child.stdin!.end();
    other.kill();
    await Promise.all([once(child, 'close'), once(other, 'close')]);
  }
});
