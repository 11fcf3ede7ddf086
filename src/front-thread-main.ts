// A thread of the HTTP front (front/front-threads.ts starts it): an HttpFront accepting on its own
// descriptor of the public port and handing every request to the main thread over its link
// (front/service-link.ts), with a router rebuilt from the main thread's outline (sent again whenever
// the routes change) for its own answers. It reports those answers and its places to the main thread,
// writes the access lines that come with the service's answers (at the service's log level, gathered
// per turn as the main thread's), stops accepting on `close`, drains on `drain`, and takes the nice
// value it is given (ops/loop-priority.ts). Every HEAP_MS it reports its V8 heap (for /metrics); the
// buffers of what it read are collected in steps, as on the main thread (memory/external-collections.ts).
import { performance } from 'node:perf_hooks';
import { getHeapStatistics } from 'node:v8';
import { parentPort, workerData } from 'node:worker_threads';
import { rendererNamed } from './error-renderers';
import { TrustedProxies } from './front/client-address';
import { SlabWriter } from './front/body-slab';
import { HttpFront } from './front/front';
import type { FromFrontThread, FrontThreadData, ToFrontThread } from './front/front-threads';
import { type PlaceCounts, Places } from './front/places';
import { ServiceLink } from './front/service-link';
import { Router } from './http/router';
import { linesPerTurn, setLogLevel } from './log';
import { collectExternalInSteps } from './memory/external-collections';
import { takeNice } from './ops/loop-priority';

/** How often the places' counts are reported when they changed. */
const COUNTS_MS = 250;
/** How often the thread's V8 heap is reported. */
const HEAP_MS = 5_000;

const data = workerData as FrontThreadData;
setLogLevel(data.logLevel);
linesPerTurn();
collectExternalInSteps();
const port = parentPort!;
if (data.nice !== null) takeNice(data.nice, 'http front');
const send = (message: FromFrontThread, transfer?: ArrayBuffer[]) => port.postMessage(message, transfer);
let router = Router.fromOutline(data.router, rendererNamed);
const link = new ServiceLink(send, new SlabWriter(data.slab), new Places(data.places));

const front = new HttpFront({
  link,
  trustedProxies: new TrustedProxies(data.trustedProxies),
  maxBodyBytes: data.maxBodyBytes,
  idleTimeoutMs: data.idleTimeoutMs,
  streamSocket: data.streamSocket,
  allowedMethods: (path) => router.allowedMethods(path),
  rendererFor: (path) => router.rendererFor(path),
  onAnswer: (answer) => send({ type: 'answer', answer: { ...answer, startedAt: performance.timeOrigin + answer.startedAt } }),
});

let reported = '';
const reportCounts = (counts: PlaceCounts) => {
  const text = JSON.stringify(counts);
  if (text !== reported) send({ type: 'counts', counts });
  reported = text;
};
setInterval(() => reportCounts(front.upstream), COUNTS_MS).unref();
const reportHeap = () => {
  const stats = getHeapStatistics();
  send({ type: 'heap', heap: { total: stats.total_heap_size, used: stats.used_heap_size, external: stats.external_memory } });
};
setInterval(reportHeap, HEAP_MS).unref();
reportHeap();

port.on('message', (message: ToFrontThread) => {
  if (message.type === 'answer') link.answered(message);
  else if (message.type === 'close') front.close();
  else if (message.type === 'drain') void front.drain(message.timeoutMs).then(() => send({ type: 'drained' }));
  else if (message.type === 'router') router = Router.fromOutline(message.router, rendererNamed);
  else if (message.type === 'nice') takeNice(message.nice, 'http front');
});

void front.listenOn(data.fd).then(() => send({ type: 'listening' }));
