// The HTTP front on worker threads (CATCOMFORT_HTTP_THREADS >= 2): the main thread opens the public
// port as the one-thread front does (exclusive, so a second instance fails with ListenError), gives
// each thread its own descriptor of that listening socket (dupFd) and closes its own, so only the
// threads accept. Each thread runs an HttpFront (front-thread-main.ts) with its share of the places
// in the service, and hands every request over its link (service-link.ts), served here; the main
// thread then does no front work. The threads write the access lines of the service's answers
// (carried with them), report their own answers (for the access log), their places and their V8
// heaps; a thread that ends unexpectedly is started again on a fresh descriptor.
import { closeSync } from 'node:fs';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import type { RouterOutline } from '../http/router';
import { createSlab, type Slab } from './body-slab';
import { listenExclusive } from './front';
import type { PlaceCounts, PlaceLimits } from './places';
import type { AnswerMessage, ToService } from './service-link';
import { ServiceSide, type ServiceSideOptions } from './service-side';
import type { FrontAnswer } from './settings';
import { type Level, log, logLevel } from '../log';

/** What a front thread is started with (structured-cloned to it). */
export interface FrontThreadData {
  fd: number;
  /** Its share of the places in the service. */
  places: PlaceLimits;
  trustedProxies: string[];
  maxBodyBytes: number;
  idleTimeoutMs: number;
  /** FrontSettings.streamSocket. */
  streamSocket: string | null;
  router: RouterOutline;
  /** The memory its requests' bodies are lent in (body-slab.ts). */
  slab: Slab;
  /** The service's log level, for the access lines it writes. */
  logLevel: Level;
  /** The nice value it takes (ops/loop-priority.ts); null: the one it starts with. */
  nice: number | null;
}

/** Messages from a front thread; `answer.startedAt` is on the epoch clock (performance.timeOrigin + now). */
export type FromFrontThread =
  | { type: 'listening' }
  | { type: 'answer'; answer: FrontAnswer }
  | { type: 'counts'; counts: PlaceCounts }
  | { type: 'heap'; heap: ThreadHeap }
  | { type: 'drained' }
  | ToService;

/** A thread's V8 heap in bytes: committed (total), live objects in it (used), and memory outside it that its objects hold (external). */
export interface ThreadHeap {
  total: number;
  used: number;
  external: number;
}

export type ToFrontThread =
  | { type: 'close' }
  | { type: 'drain'; timeoutMs: number }
  | { type: 'router'; router: RouterOutline }
  | { type: 'nice'; nice: number }
  | AnswerMessage;

export interface FrontThreadsOptions {
  count: number;
  /** The thread's script (front-thread-main.js), and its settings but the descriptor. */
  entry: string;
  data: Omit<FrontThreadData, 'fd' | 'slab' | 'logLevel' | 'nice'>;
  dupFd(fd: number): number;
  onAnswer?(answer: FrontAnswer): void;
  /** Serves a request; `startedAt` on performance.now()'s clock. */
  serve: ServiceSideOptions['serve'];
}

interface Thread {
  worker: Worker;
  counts: PlaceCounts;
  heap: ThreadHeap;
  listening: boolean;
  drained: boolean;
  /** The service's side of its link. */
  side: ServiceSide;
}

/** Each field of `zero` summed over `reports`. */
function sumOver<K extends string>(reports: Array<Record<K, number>>, zero: Record<K, number>): Record<K, number> {
  const sum = { ...zero };
  for (const report of reports) for (const key of Object.keys(zero) as K[]) sum[key] += report[key];
  return sum;
}

export class FrontThreads {
  private readonly threads = new Set<Thread>();
  private spare: number | null = null;
  private closing = false;
  private drainWaiters: Array<() => void> = [];
  private nice: number | null = null;

  constructor(private readonly options: FrontThreadsOptions) {}

  /** Opens host:port (0 = any free port), starts the threads on it and resolves with the port; rejects with ListenError. */
  async listen(host: string, port: number): Promise<number> {
    const server = net.createServer();
    const bound = await listenExclusive(server, host, port);
    // Still before the loop could accept: the threads' descriptors are made from this one, then it closes.
    this.spare = this.options.dupFd((server as unknown as { _handle: { fd: number } })._handle.fd);
    server.close();
    try {
      await Promise.all(Array.from({ length: this.options.count }, () => this.start()));
    } catch (error) {
      this.close();
      await this.terminate();
      throw error;
    }
    return bound;
  }

  private start(): Promise<void> {
    const slab = createSlab(this.options.data.places.places + this.options.data.places.queue);
    const workerData: FrontThreadData = { ...this.options.data, fd: this.options.dupFd(this.spare!), slab, logLevel: logLevel(), nice: this.nice };
    const worker = new Worker(this.options.entry, { workerData });
    const side = new ServiceSide({ slab, post: (answer) => worker.postMessage(answer), serve: this.options.serve, carryLines: true });
    const thread: Thread = { worker, counts: { open: 0, idle: 0, waiting: 0 }, heap: { total: 0, used: 0, external: 0 }, listening: false, drained: false, side };
    this.threads.add(thread);
    thread.worker.unref();
    return new Promise((resolve, reject) => {
      thread.worker.on('message', (message: FromFrontThread) => {
        if (message.type === 'listening') {
          thread.listening = true;
          resolve();
        }
        else if (message.type === 'request' || message.type === 'body' || message.type === 'abort') thread.side.receive(message);
        else if (message.type === 'counts') thread.counts = message.counts;
        else if (message.type === 'heap') thread.heap = message.heap;
        else if (message.type === 'answer') this.options.onAnswer?.({ ...message.answer, startedAt: message.answer.startedAt - performance.timeOrigin });
        else if (message.type === 'drained') this.markDrained(thread);
      });
      thread.worker.once('error', (error) => {
        log.error('http front thread failed', { error: error.stack ?? String(error) });
        reject(error);
      });
      thread.worker.once('exit', (code) => {
        this.threads.delete(thread);
        thread.side.abortAll(); // their clients' connections ended with the thread
        this.markDrained(thread);
        if (this.closing || this.spare === null || !thread.listening) return;
        log.error('http front thread ended; starting another', { code });
        this.start().catch(() => undefined);
      });
    });
  }

  private markDrained(thread: Thread): void {
    thread.drained = true;
    if ([...this.threads].every((t) => t.drained)) for (const resolve of this.drainWaiters.splice(0)) resolve();
  }

  private post(message: ToFrontThread): void {
    for (const thread of this.threads) thread.worker.postMessage(message);
  }

  /** The routes changed: every thread (and every thread started later) gets the new outline. */
  setRouter(router: RouterOutline): void {
    this.options.data.router = router;
    this.post({ type: 'router', router });
  }

  /** Every thread (and every thread started later) takes nice value `nice`. */
  setNice(nice: number): void {
    this.nice = nice;
    this.post({ type: 'nice', nice });
  }

  /** The threads' places, summed from their latest reports. */
  get upstream(): PlaceCounts {
    return sumOver([...this.threads].map((t) => t.counts), { open: 0, idle: 0, waiting: 0 });
  }

  /** The threads' V8 heaps, summed from their latest reports. */
  get heap(): ThreadHeap {
    return sumOver([...this.threads].map((t) => t.heap), { total: 0, used: 0, external: 0 });
  }

  /** Stops accepting connections (every thread closes its descriptor); open connections go on. */
  close(): void {
    if (this.closing) return;
    this.closing = true;
    this.post({ type: 'close' });
    if (this.spare !== null) closeSync(this.spare);
    this.spare = null;
  }

  /** Shutdown, after close(): each thread drains as HttpFront.drain does; then the threads end. Bounded by `timeoutMs`. */
  async drain(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const drained = new Promise<void>((resolve) => {
      this.drainWaiters.push(resolve);
      timer = setTimeout(resolve, timeoutMs);
    });
    this.post({ type: 'drain', timeoutMs });
    if (this.threads.size > 0) await drained;
    clearTimeout(timer);
    await this.terminate();
  }

  private async terminate(): Promise<void> {
    await Promise.all([...this.threads].map((t) => t.worker.terminate()));
  }
}
