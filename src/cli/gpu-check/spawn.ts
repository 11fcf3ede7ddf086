// Runs one `catcomfort gpu-check` configuration in a child process (`gpu-check --child NAME`, see
// child.ts) with `env` on top of this environment, and reads its report, the one JSON line it
// prints (with `env` added). The child runs in a process group
// of its own, killed whole at the deadline (so the service it started ends too); its stdin is a
// pipe from this process, and when that closes (this process was killed, e.g. by a command's time
// limit) the child ends its group itself, so nothing is left running.
import { spawn } from 'node:child_process';
import { CLIENTS, failedReport, type ChildReport } from './report';

export function runChild(name: string, env: Record<string, string>, args: string[], deadline: number): Promise<ChildReport> {
  return new Promise((resolve) => {
    // A queue that holds every client of the largest load level, and a deadline long enough for its
    // wait: a closed loop measures capacity, so its requests wait rather than fail.
    const queue = {
      CATCOMFORT_QUEUE_MAX: process.env.CATCOMFORT_QUEUE_MAX ?? String(2 * CLIENTS.at(-1)!),
      CATCOMFORT_REQUEST_TIMEOUT_MS: process.env.CATCOMFORT_REQUEST_TIMEOUT_MS ?? '60000',
    };
    const proc = spawn(process.execPath, [process.argv[1]!, 'gpu-check', '--child', name, '--deadline', String(deadline), ...args], {
      env: { ...process.env, ...queue, ...env },
      stdio: ['pipe', 'pipe', 'inherit'],
      detached: true,
    });
    let out = '';
    proc.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const timer = setTimeout(() => process.kill(-proc.pid!, 'SIGKILL'), Math.max(0, deadline - Date.now()));
    proc.on('close', (code, signal) => {
      clearTimeout(timer);
      proc.stdin.destroy();
      const line = out.split('\n').find((l) => l.startsWith('{"name":'));
      if (line && code === 0) resolve({ ...(JSON.parse(line) as ChildReport), env });
      else resolve(failedReport(name, env, signal ? `ended by ${signal}${signal === 'SIGKILL' ? ' (time limit)' : ''}` : `exited with code ${code}`));
    });
  });
}

/** In the child: end this process group when the parent's pipe closes; returns what to call once the report is out. */
export function endWithParent(): () => void {
  const end = () => process.kill(-process.pid, 'SIGKILL');
  process.stdin.on('end', end).resume();
  return () => {
    process.stdin.off('end', end);
    process.stdin.destroy();
  };
}
