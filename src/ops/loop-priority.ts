// When the CPU is short, the analyses come first: the event loop's thread and the HTTP front's
// threads run CATCOMFORT_LOOP_NICE steps of nice below the rest of the process. On Linux a nice
// value belongs to one thread, and a thread starts with its creator's, so the main thread lowers
// itself only once the addon's pool (whose threads start ONNX Runtime's and libvips's) is running.
// A saturated CPU then answers fewer refusals a second instead of running fewer analyses.
import os from 'node:os';
import { log } from '../log';

/** Steps below the analyses with the CPU provider alone (measured on 2 cores: docs/performance-log.md). */
export const CPU_LOOP_NICE = 5;

/**
 * The steps the loop threads take: the setting, else CPU_LOOP_NICE when the analyses run on the CPU,
 * and 0 when they do not (a GPU provider, not measured there; the benchmarks' free model).
 */
export function loopNiceSteps(setting: number | null, analysesOnCpu: boolean): number {
  return setting ?? (analysesOnCpu ? CPU_LOOP_NICE : 0);
}

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
