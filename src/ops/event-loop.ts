// The main thread's load, where every request's HTTP, JSON, batching and answer work happens:
// the event loop's busy time (performance.eventLoopUtilization) and the main thread's own CPU time
// (Linux: /proc/self/task/<pid>/stat, the task whose id is the pid), cumulative; and over the last
// complete window of WINDOW_MS, the loop's utilisation and main-thread CPU microseconds per answered
// request (HTTP and gRPC), and the garbage collector's share of that CPU time (its pauses on the main
// thread, from `gc` performance entries). /metrics and /v2/stats show them; the bench scrapes the
// cumulative ones.
import { readFileSync } from 'node:fs';
import { performance, PerformanceObserver } from 'node:perf_hooks';

export const WINDOW_MS = 10_000;
/** USER_HZ: the unit of utime and stime in /proc on Linux. */
const TICKS_PER_SECOND = 100;

let answered = 0;

/** One more request answered (or abandoned): the access log calls it for every HTTP request and gRPC call. */
export function countAnswered(): void {
  answered++;
}

/** The main thread's user + system CPU seconds; null where /proc does not say. */
export function mainThreadCpuSeconds(): number | null {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return null;
  }
}

let gcMs = 0;

/** Seconds the garbage collector held the main thread since sampling started (its `gc` entries' durations). */
export function gcSeconds(): number {
  return gcMs / 1000;
}

/** Seconds the event loop has been busy since start. */
export function eventLoopBusySeconds(): number {
  return performance.eventLoopUtilization().active / 1000;
}

export interface EventLoopFigures {
  /** Busy share of the event loop over the last window (0..1); null before the first window ends. */
  utilization: number | null;
  /** Main-thread CPU microseconds per request answered in the last window; null without requests or /proc. */
  mainThreadUsPerRequest: number | null;
  /** The garbage collector's pauses as a share of the main thread's CPU time in the last window; null without /proc or CPU time. */
  gcShare: number | null;
  windowS: number;
  busySeconds: number;
  mainThreadCpuSeconds: number | null;
  gcSeconds: number;
  requests: number;
}

interface Mark {
  elu: ReturnType<typeof performance.eventLoopUtilization>;
  cpu: number | null;
  gc: number;
  requests: number;
}

const mark = (): Mark => ({ elu: performance.eventLoopUtilization(), cpu: mainThreadCpuSeconds(), gc: gcSeconds(), requests: answered });
let previous = mark();
let last: Pick<EventLoopFigures, 'utilization' | 'mainThreadUsPerRequest' | 'gcShare'> = { utilization: null, mainThreadUsPerRequest: null, gcShare: null };
let sampler: NodeJS.Timeout | null = null;

/** Starts closing a window every WINDOW_MS (the timer does not keep the process alive) and summing GC pauses. */
export function sampleEventLoop(): void {
  if (sampler) return;
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcMs += entry.duration;
  }).observe({ entryTypes: ['gc'] });
  previous = mark();
  sampler = setInterval(() => {
    const now = mark();
    const requests = now.requests - previous.requests;
    const cpu = now.cpu !== null && previous.cpu !== null ? now.cpu - previous.cpu : null;
    last = {
      utilization: Number(performance.eventLoopUtilization(now.elu, previous.elu).utilization.toFixed(4)),
      mainThreadUsPerRequest: cpu !== null && requests > 0 ? Math.round((cpu * 1e6) / requests) : null,
      gcShare: gcShareOf(now.gc - previous.gc, cpu),
    };
    previous = now;
  }, WINDOW_MS);
  sampler.unref();
}

/** GC seconds over main-thread CPU seconds of one window (0..1, rounded); null without CPU time. */
export function gcShareOf(gc: number, cpu: number | null): number | null {
  return cpu !== null && cpu > 0 ? Number(Math.min(1, gc / cpu).toFixed(4)) : null;
}

export function eventLoopFigures(): EventLoopFigures {
  return {
    ...last,
    windowS: WINDOW_MS / 1000,
    busySeconds: Number(eventLoopBusySeconds().toFixed(3)),
    mainThreadCpuSeconds: mainThreadCpuSeconds(),
    gcSeconds: Number(gcSeconds().toFixed(3)),
    requests: answered,
  };
}
