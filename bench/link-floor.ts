// The floor under the front's link (src/front/service-link.ts): the main thread's CPU per round trip
// when a worker thread sends it one small request a millisecond and it answers at once, doing nothing
// else. `message`: a request-shaped object posted each way (what the link does); `number`: one number
// each way; `ring`: fixed records of numbers in a SharedArrayBuffer each way, each side woken by
// Atomics.notify and waiting with Atomics.waitAsync (the shared-memory ring issue 57 proposes). Each
// way's CPU is read from /proc/self/task/<main thread>/stat around ROUNDS round trips, so the figure is
// what the loop's waking and the hand-over cost, the floor any service work adds to.
// Usage: node dist/bench/link-floor.js [ROUNDS=10000] [REPEATS=3]
import { readFileSync } from 'node:fs';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

type Way = 'message' | 'number' | 'ring';
const WAYS: readonly Way[] = ['message', 'number', 'ring'];
/** Numbers per record, records in each ring. */
const RECORD = 8;
const SLOTS = 1024;
/** Int32 counters at the start of the buffer: records written to the main thread, and back. */
const TO_MAIN = 0;
const TO_WORKER = 1;

function rings(buffer: SharedArrayBuffer): { counters: Int32Array; toMain: Float64Array; toWorker: Float64Array } {
  const bytes = SLOTS * RECORD * 8;
  return { counters: new Int32Array(buffer, 0, 2), toMain: new Float64Array(buffer, 64, SLOTS * RECORD), toWorker: new Float64Array(buffer, 64 + bytes, SLOTS * RECORD) };
}

/** Atomics.waitAsync (Node 20 has it; the TypeScript lib we build with does not declare it). */
const waitAsync = (Atomics as unknown as { waitAsync(array: Int32Array, index: number, value: number): { async: boolean; value: Promise<string> | string } }).waitAsync;

/** Calls `take(count)` each time the counter at `index` passes `seen`, forever. */
function follow(counters: Int32Array, index: number, take: (count: number) => void): void {
  let seen = 0;
  const wait = (): void => {
    const waited = waitAsync(counters, index, seen);
    void Promise.resolve(waited.value).then(() => {
      const now = Atomics.load(counters, index);
      take(now - seen);
      seen = now;
      wait();
    });
  };
  wait();
}

function write(counters: Int32Array, index: number, ring: Float64Array, first: number): void {
  const at = Atomics.load(counters, index);
  for (let k = 0; k < RECORD; k++) ring[(at % SLOTS) * RECORD + k] = first + k;
  Atomics.store(counters, index, at + 1);
  Atomics.notify(counters, index);
}

const request = (id: number) => ({ type: 'request', id, head: 'POST\n/v2/predict\ncontent-type\napplication/json\n127.0.0.1', startedAt: 1e12 + id, body: [0, 0, 131072, 10, 131060], hot: { route: '/v2/predict', model: 'bc-v2', path: '/v2/predict', requestId: `r-${id}`, apiKey: 'key', peer: '127.0.0.1', args: { threshold: null, imageStart: 11, imageEnd: 131059 } } });
const answer = (id: number) => ({ type: 'hot', id, result: { requestId: `r-${id}`, serverTiming: 'queue;dur=0.1, analysis;dur=0.2', figures: { detected: true, box: [1, 2, 3, 4], score: 0.9, comfort: 0.3 }, line: { method: 'POST', path: '/v2/predict', status: 200 } } });

function mainThreadMicros(): number {
  const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 1e4; // utime + stime, in clock ticks of 10 ms
}

function measure(way: Way, rounds: number): Promise<number> {
  return new Promise((resolve) => {
    const buffer = new SharedArrayBuffer(64 + 2 * SLOTS * RECORD * 8);
    const worker = new Worker(__filename, { workerData: { way, buffer, rounds } });
    const { counters, toWorker } = rings(buffer);
    let answered = 0;
    let started = 0;
    const done = () => {
      const micros = mainThreadMicros() - started;
      void worker.terminate().then(() => resolve(micros / rounds));
    };
    const answerOne = (id: number) => {
      if (answered === 0) started = mainThreadMicros();
      answered++;
      if (way === 'message') worker.postMessage(answer(id));
      else if (way === 'number') worker.postMessage(id);
      else write(counters, TO_WORKER, toWorker, id);
      if (answered === rounds) done();
    };
    if (way === 'ring') follow(counters, TO_MAIN, (count) => { for (let i = 0; i < count; i++) answerOne(answered); });
    else worker.on('message', (m: { id: number } | number) => answerOne(typeof m === 'number' ? m : m.id));
  });
}

function workerSide(): void {
  const { way, buffer, rounds } = workerData as { way: Way; buffer: SharedArrayBuffer; rounds: number };
  const { counters, toMain } = rings(buffer);
  if (way === 'ring') follow(counters, TO_WORKER, () => undefined);
  else parentPort!.on('message', () => undefined);
  let id = 0;
  const timer = setInterval(() => {
    id++;
    if (way === 'message') parentPort!.postMessage(request(id));
    else if (way === 'number') parentPort!.postMessage(id);
    else write(counters, TO_MAIN, toMain, id);
    if (id > rounds + 10) clearInterval(timer);
  }, 1);
}

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 10_000);
  const repeats = Number(process.argv[3] ?? 3);
  const figures = new Map<Way, number[]>(WAYS.map((way) => [way, []]));
  for (let r = 0; r < repeats; r++) for (const way of WAYS) figures.get(way)!.push(await measure(way, rounds));
  console.log(`| way | main-thread us per round trip (${repeats} runs of ${rounds}, one a ms) |\n|---|---|`);
  for (const [way, us] of figures) console.log(`| ${way} | ${us.map((u) => u.toFixed(1)).join(', ')} |`);
}

if (isMainThread) void main();
else workerSide();
