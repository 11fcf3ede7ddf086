// A busy neighbour: another program on the machine that keeps one core busy (a busy loop at the
// default priority), as on a shared host. Started once it is seen spinning (CPU time in /proc).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { waitFor } from './wait';

export interface BusyNeighbour {
  pid: number;
  stop(): Promise<void>;
}

/** CPU ticks (user + system) `pid` has used. */
function ticks(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

export async function startBusyNeighbour(): Promise<BusyNeighbour> {
  const child = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const pid = child.pid!;
  // Past Node's start-up (a few ticks): 20 ticks (0.2 s of CPU) come only from the loop.
  await waitFor('the busy neighbour spinning', () => ticks(pid) >= 20, { intervalMs: 10 });
  return {
    pid,
    stop: async () => {
      child.kill('SIGKILL');
      await gone;
    },
  };
}
