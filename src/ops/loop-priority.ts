// With CATCOMFORT_LOOP_NICE set, the analyses come first when the CPU is short: the event loop's
// thread and the HTTP front's threads run that many steps of nice below the rest of the process. On
// Linux a nice value belongs to one thread, and a thread starts with its creator's, so the main
// thread lowers itself only once the addon's pool (whose threads start ONNX Runtime's and libvips's)
// is running. Off by default: nice is host-wide, so a lowered loop also yields to every other
// program on the machine (docs/operations.md "CPU priority").
import os from 'node:os';
import { log } from '../log';

/** The nice value `steps` below the calling thread's own (at most 19, the lowest priority). */
export function niceBelowThisThread(steps: number): number {
  return Math.min(19, os.getPriority(0) + steps);
}

/** Gives the calling thread (`thread` names it in the log) nice value `value`; false, with a warn line, when the system refuses. */
export function takeNice(value: number, thread: string): boolean {
  if (os.getPriority(0) === value) return true;
  try {
    os.setPriority(0, value);
    return true;
  } catch (error) {
    log.warn('thread priority unchanged: the system refused a lower one', { thread, nice: value, error: (error as Error).message });
    return false;
  }
}
