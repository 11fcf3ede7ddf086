// CATCOMFORT_LOOP_NICE (src/ops/loop-priority.ts): once the packs are warm, the event loop's thread
// and the HTTP front's threads run that many steps of nice below the process's value, while the
// threads that ran the warm-up's analyses keep the process's value; by default (0) nothing changes.
// Read from /proc/<pid>/task/*/stat of the real service.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import { test } from 'node:test';
import { startServer } from './helpers/server';

interface ThreadState {
  tid: number;
  nice: number;
  /** User and system CPU time, in clock ticks. */
  cpu: number;
}

function threadsOf(pid: number): ThreadState[] {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15, nice 19.
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
    return { tid: Number(tid), nice: Number(fields[16]), cpu: Number(fields[11]) + Number(fields[12]) };
  });
}

/** The service's threads once ready: its main thread, and the busiest other one (a thread of the addon's pool after warm-up). */
async function threadsAfterStart(env: Record<string, string>): Promise<{ main: ThreadState; busiest: ThreadState; all: ThreadState[]; output: string }> {
  const server = await startServer(env);
  try {
    const pid = server.child.pid!;
    const all = threadsOf(pid);
    const main = all.find((t) => t.tid === pid)!;
    const busiest = all.filter((t) => t.tid !== pid).sort((a, b) => b.cpu - a.cpu)[0]!;
    return { main, busiest, all, output: server.output() };
  } finally {
    await server.stop();
  }
}

// The service starts with this process's value (spawned from its main thread).
const base = os.getPriority(0);
const lowered = Math.min(19, base + 5);

test('CATCOMFORT_LOOP_NICE=5: the main thread runs 5 steps of nice below the threads that ran the analyses', async () => {
  const { main, busiest, output } = await threadsAfterStart({ CATCOMFORT_HTTP_THREADS: '1', CATCOMFORT_LOOP_NICE: '5' });
  assert.equal(main.nice, lowered);
  assert.equal(busiest.nice, base);
  assert.ok(busiest.cpu > 0, 'the busiest other thread did run');
  assert.match(output, new RegExp(`"nice":${lowered},"steps":5,"msg":"loop priority"`));
});

test('with front threads, they take the same value as the main thread', async () => {
  const { main, busiest, all } = await threadsAfterStart({ CATCOMFORT_HTTP_THREADS: '2', CATCOMFORT_LOOP_NICE: '5' });
  assert.equal(main.nice, lowered);
  assert.equal(busiest.nice, base);
  if (lowered !== base) assert.ok(all.filter((t) => t.nice === lowered).length >= 3, JSON.stringify(all));
});

test('by default every thread stays at the process value', async () => {
  const { all, output } = await threadsAfterStart({ CATCOMFORT_HTTP_THREADS: '2' });
  assert.deepEqual([...new Set(all.map((t) => t.nice))], [base]);
  assert.doesNotMatch(output, /loop priority/);
});
