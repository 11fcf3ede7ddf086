// CPU seconds a process and every process below it have used (user + system, and that of their
// children already waited for), from /proc: the cost of a server that runs as a tree (a cluster,
// uvicorn's workers, Ray's raylet and actors) read the same way as one of a single process.
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks a second for /proc's times (USER_HZ: 100 on Linux for every architecture Node runs on). */
const TICKS = 100;

interface Stat {
  ppid: number;
  ticks: number;
}

function stat(pid: number): Stat | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null; // gone meanwhile
  }
  // Fields after the command name, which is in parentheses and may hold spaces: state ppid ... utime(14) stime cutime cstime.
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return { ppid: Number(f[1]), ticks: Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]) };
}

/** CPU seconds of `root` and its descendants now living. */
export function processTreeCpuS(root: number): number {
  const stats = new Map<number, Stat>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = stat(Number(name));
    if (s) stats.set(Number(name), s);
  }
  const children = new Map<number, number[]>();
  for (const [pid, s] of stats) {
    const siblings = children.get(s.ppid);
    if (siblings) siblings.push(pid);
    else children.set(s.ppid, [pid]);
  }
  let ticks = 0;
  const todo = [root];
  while (todo.length > 0) {
    const pid = todo.pop()!;
    ticks += stats.get(pid)?.ticks ?? 0;
    todo.push(...(children.get(pid) ?? []));
  }
  return ticks / TICKS;
}
