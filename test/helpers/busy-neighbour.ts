// A busy neighbour: another program on the machine that keeps one core busy (a busy loop at the
// default priority), as on a shared host. Started once it is seen spinning (CPU time in /proc).
import { spawn } from 'node:child_process';
import { processTreeCpuS } from '../../bench/process-cpu';
import { waitFor } from './wait';

export interface BusyNeighbour {
  pid: number;
  stop(): Promise<void>;
}

export async function startBusyNeighbour(): Promise<BusyNeighbour> {
  const child = spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' });
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const pid = child.pid!;
  // Past Node's start-up (a few hundredths of a second): 0.2 s of CPU come only from the loop.
  await waitFor('the busy neighbour spinning', () => processTreeCpuS(pid) >= 0.2, { intervalMs: 10 });
  return {
    pid,
    stop: async () => {
      child.kill('SIGKILL');
      await gone;
    },
  };
}
