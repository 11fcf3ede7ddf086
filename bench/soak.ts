// A long run of mixed load against our service, started here as deployed (bin/catcomfort-service), and
// its memory over time by kind of mapping (bench/smaps.ts). The load, SOAK_RATE requests a second in
// all, open loop with at most SOAK_IN_FLIGHT at once: /v2/predict with fixture photos and 12 MP phone
// photos, OIP REST binary infers, gRPC ModelInfer, scans (submitted, then read until COMPLETED) and bad
// requests (each must get its documented 4xx). One JSON line a sample (every SOAK_SAMPLE_S), then a
// summary: errors, scans lost, and RSS after the first 30 minutes against the 30-minute value.
// A sample's RSS is the median of readings every SOAK_READ_S (1 s) since the last sample: one 12 MP photo
// in flight holds about 40 MiB for a moment, so a single reading says more about what is in flight
// than about what stays. The highest of those readings (rssPeakMiB: what a memory limit must hold)
// and the single reading at the sample (rssNowMiB) are kept beside it, and from /metrics: the service's
// malloc trims so far (mallocTrims: count, MiB given back, ms spent), its pool of image-sized blocks
// (imageBlocks: taken, reused, MiB in use and idle), jemalloc's account of its memory (jemallocMiB, when
// the service runs on it), the main thread's V8 heap and external memory (mainThreadMiB), the front
// threads' V8 heaps (frontThreadsMiB: null with the front on the main thread) and the size of
// the SQLite scan store's file and its log (scanStoreMiB: SQLite caches up to 2 MiB of its pages).
//   SOAK_MINUTES=120 SOAK_HTTP_THREADS=2 node dist/bench/soak.js > soak.jsonl
// Other CATCOMFORT_* settings and MALLOC_* / GLIBC_TUNABLES in the environment reach the service.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fixturePhotos, installCleanup, repoRoot, sleep } from './common';
import { grpcSender } from './grpc-client';
import { phonePhotos } from './phone-photos';
import { oipBinaryRequest, predictBody } from './protocols';
import { API_KEY, protocolUrl, startServer, stopServer, waitReady } from './servers';
import { MAPPING_KINDS, memoryByKind, residentKiB } from './smaps';
import type { Outcome } from './load-window';
import { SQLITE_FILE } from '../src/store/sqlite-db';

const minutes = Number(process.env.SOAK_MINUTES ?? 120);
const rate = Number(process.env.SOAK_RATE ?? 8);
const inFlightLimit = Number(process.env.SOAK_IN_FLIGHT ?? 16);
const sampleS = Number(process.env.SOAK_SAMPLE_S ?? 60);
const readS = Number(process.env.SOAK_READ_S ?? 1);
const httpThreads = process.env.SOAK_HTTP_THREADS ?? '2';
const model = process.env.SOAK_MODEL ?? 'bc-v1';
/** Where the 5 % band starts: RSS is compared with its value at this minute. */
const REFERENCE_MINUTE = Math.min(30, minutes / 4);

type Kind = 'predict' | 'phone' | 'oip' | 'grpc' | 'scan' | 'bad';
/** Share of each kind in the mix (out of 20). */
const MIX: Array<[Kind, number]> = [['predict', 7], ['phone', 2], ['oip', 3], ['grpc', 3], ['scan', 2], ['bad', 3]];

interface Tally {
  ok: number;
  overloaded: number;
  errors: number;
  /** The first few errors, as seen. */
  examples: string[];
}

const tallies = Object.fromEntries(MIX.map(([k]) => [k, { ok: 0, overloaded: 0, errors: 0, examples: [] } as Tally])) as Record<Kind, Tally>;
let skipped = 0;

function record(kind: Kind, outcome: 'ok' | 'overloaded' | string): void {
  const t = tallies[kind];
  if (outcome === 'ok') t.ok++;
  else if (outcome === 'overloaded') t.overloaded++;
  else {
    t.errors++;
    if (t.examples.length < 5) t.examples.push(outcome);
  }
}

/** A scan credential issued by the real CLI on the service's store. */
function scanCredential(dataDir: string): Record<string, string> {
  const out = execFileSync(process.execPath, [path.join(repoRoot, 'dist/src/cli/main.js'), 'credentials', 'create', '--name', 'soak'], {
    env: { ...process.env, CATCOMFORT_DATA_DIR: dataDir },
    encoding: 'utf8',
  });
  return { 'api-key': /key id: (\S+)/.exec(out)![1]!, 'api-secret': /secret: (\S+)/.exec(out)![1]! };
}

const mib = (kib: number) => Math.round(kib / 102.4) / 10;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function http(url: string, init: RequestInit): Promise<{ status: number; text: string }> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(60_000), headers: { 'api-key': API_KEY, ...(init.headers as Record<string, string>) } });
  return { status: response.status, text: await response.text() };
}

function expect(status: number, wanted: number, text: string): string {
  if (status === wanted) return 'ok';
  return status === 429 ? 'overloaded' : `${status} ${text.slice(0, 160)}`;
}

/** Bad requests and the status each must get. */
const BAD: Array<{ path: string; init: RequestInit; status: number }> = [
  { path: '/v2/predict', init: { method: 'POST', body: '{"image":', headers: { 'content-type': 'application/json' } }, status: 422 },
  { path: '/v2/predict', init: { method: 'POST', body: JSON.stringify({ image: Buffer.from('not an image at all').toString('base64') }), headers: { 'content-type': 'application/json' } }, status: 400 },
  { path: '/v2/predict', init: { method: 'POST', body: '{}', headers: { 'content-type': 'application/json', 'api-key': 'wrong-key' } }, status: 401 },
  { path: '/v2/nowhere', init: { method: 'GET' }, status: 404 },
  { path: '/v2/models/no-such-pack/infer', init: { method: 'POST', body: '{"inputs":[{"name":"image","datatype":"BYTES","shape":[1],"data":["x"]}]}', headers: { 'content-type': 'application/json' } }, status: 404 },
];

async function main(): Promise<void> {
  installCleanup();
  const photos = fixturePhotos().map((p) => readFileSync(p.path));
  const phones = (await phonePhotos()).map((p) => readFileSync(p.path));
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'cc-soak-'));
  const server = await startServer('us', {
    precision: 'int8',
    settings: { CATCOMFORT_HTTP_THREADS: httpThreads, CATCOMFORT_DATA_DIR: dataDir, CATCOMFORT_LOG_LEVEL: 'warn' },
    peerWorkers: 1,
    python: null,
    grpc: true,
    freeNetworks: false,
  });
  const origin = new URL(server.url).origin;
  await waitReady(server, predictBody(photos[0]!), 180);
  const pid = server.child.pid!;
  const grpc = grpcSender(protocolUrl(server, 'grpc', model), API_KEY, photos, 60);
  const oipUrl = protocolUrl(server, 'oip-rest', model);
  const scanKey = scanCredential(dataDir);
  const scans = new Set<string>();
  let scansDone = 0;
  let n = 0;

  const send: Record<Kind, (i: number) => Promise<string>> = {
    predict: async (i) => {
      const r = await http(server.url, { method: 'POST', body: predictBody(photos[i % photos.length]!), headers: { 'content-type': 'application/json' } });
      return expect(r.status, 200, r.text);
    },
    phone: async (i) => {
      const r = await http(server.url, { method: 'POST', body: predictBody(phones[i % phones.length]!), headers: { 'content-type': 'application/json' } });
      return expect(r.status, 200, r.text);
    },
    oip: async (i) => {
      const { headers, body } = oipBinaryRequest(photos[i % photos.length]!);
      const r = await http(oipUrl, { method: 'POST', body: new Uint8Array(body), headers });
      return expect(r.status, 200, r.text);
    },
    grpc: async (i) => {
      const outcome: Outcome = await grpc(i);
      return typeof outcome === 'string' ? outcome : `grpc ${outcome.refused}`;
    },
    scan: async (i) => {
      const r = await http(`${origin}/scan`, { method: 'POST', body: JSON.stringify({ image: photos[i % photos.length]!.toString('base64') }), headers: { 'content-type': 'application/json', ...scanKey } });
      if (r.status !== 202) return expect(r.status, 202, r.text);
      scans.add((JSON.parse(r.text) as { scanId: string }).scanId);
      return 'ok';
    },
    bad: async (i) => {
      const b = BAD[i % BAD.length]!;
      const r = await http(`${origin}${b.path}`, b.init);
      return expect(r.status, b.status, r.text);
    },
  };
  const wheel = MIX.flatMap(([kind, share]) => Array<Kind>(share).fill(kind));
  let inFlight = 0;

  let reading: Promise<void> | null = null;
  const readScansOnce = async () => {
    for (const id of [...scans]) {
      const r = await http(`${origin}/scan/${id}`, { method: 'GET', headers: scanKey }).catch((e: Error) => ({ status: 0, text: e.message }));
      if (r.status !== 200) continue;
      let status: string;
      try {
        status = (JSON.parse(r.text) as { status: string }).status;
      } catch {
        continue; // read again on the next pass
      }
      if ((status === 'COMPLETED' || status === 'FAILED') && scans.delete(id)) {
        scansDone++;
        if (status === 'FAILED') record('scan', `scan ${id} FAILED`);
      }
    }
  };
  /** One pass over the open scans at a time. */
  const readScans = () => (reading ??= readScansOnce().finally(() => (reading = null)));

  const startedAt = performance.now();
  const endAt = startedAt + minutes * 60_000;
  const samples: Array<{ minute: number; rssKiB: number; peakKiB: number; nowKiB: number }> = [];
  let readings: number[] = [];
  let nextSample = startedAt;
  let nextReading = startedAt;
  /** From /metrics: the service's malloc trims so far (CATCOMFORT_MALLOC_TRIM_INTERVAL_MS: count, MiB released, ms spent), its pool of image-sized blocks (taken, reused, MiB in use and idle), jemalloc's bytes by state and the main thread's V8 heap and external memory. */
  const addonMemory = async () => {
    const names = ['catcomfort_malloc_trims_total', 'catcomfort_malloc_trim_released_bytes_total', 'catcomfort_malloc_trim_seconds_total', 'catcomfort_image_blocks_taken_total', 'catcomfort_image_blocks_reused_total', 'catcomfort_image_blocks_bytes'];
    const scraped = [...names, 'catcomfort_malloc_bytes', 'catcomfort_front_threads_heap_bytes', 'nodejs_heap_size_total_bytes', 'nodejs_external_memory_bytes', 'catcomfort_external_collections_total', 'catcomfort_external_collections_seconds_total'];
    const text = (await http(`${origin}/metrics?${scraped.map((n) => `name=${n}`).join('&')}`, { method: 'GET' }).catch(() => ({ text: '' }))).text;
    const value = (series: string) => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    return {
      mallocTrims: { count: value(names[0]!), releasedMiB: mib(value(names[1]!) / 1024), ms: Math.round(value(names[2]!) * 1000) },
      imageBlocks: {
        taken: value(names[3]!),
        reused: value(names[4]!),
        inUseMiB: mib(value(`${names[5]!}{state="in_use"}`) / 1024),
        idleMiB: mib(value(`${names[5]!}{state="idle"}`) / 1024),
      },
      jemallocMiB: Object.fromEntries(['allocated', 'active', 'dirty', 'resident', 'retained'].map((state) => [state, mib(value(`catcomfort_malloc_bytes{state="${state}"}`) / 1024)])),
      mainThreadMiB: { heap: mib(value('nodejs_heap_size_total_bytes') / 1024), external: mib(value('nodejs_external_memory_bytes') / 1024), collections: value('catcomfort_external_collections_total'), collectionsMs: Math.round(value('catcomfort_external_collections_seconds_total') * 1000) },
      frontThreadsMiB: Object.fromEntries(['total', 'used', 'external'].map((state) => [state, mib(value(`catcomfort_front_threads_heap_bytes{state="${state}"}`) / 1024)])),
    };
  };
  const sample = async () => {
    const { mallocTrims, imageBlocks, jemallocMiB, mainThreadMiB, frontThreadsMiB } = await addonMemory();
    const m = memoryByKind(pid);
    const minute = (performance.now() - startedAt) / 60_000;
    const rssKiB = readings.length > 0 ? median(readings) : m.totalKiB;
    const peakKiB = Math.max(m.totalKiB, ...readings);
    readings = [];
    samples.push({ minute, rssKiB, peakKiB, nowKiB: m.totalKiB });
    const byKind = Object.fromEntries(MAPPING_KINDS.map((k) => [k, mib(m.rssKiB[k])]));
    const scanStoreMiB = mib(['', '-wal'].reduce((sum, end) => sum + (statSync(path.join(dataDir, `${SQLITE_FILE}${end}`), { throwIfNoEntry: false })?.size ?? 0), 0) / 1024);
    const counts = Object.fromEntries(Object.entries(tallies).map(([k, t]) => [k, `${t.ok}/${t.overloaded}/${t.errors}`]));
    process.stdout.write(`${JSON.stringify({ minute: Math.round(minute * 10) / 10, rssMiB: mib(rssKiB), rssPeakMiB: mib(peakKiB), rssNowMiB: mib(m.totalKiB), byKindMiB: byKind, arenaHeaps: m.arenaHeaps, largestArenaHeapMiB: mib(m.largestArenaHeapKiB), mallocTrims, imageBlocks, jemallocMiB, mainThreadMiB, frontThreadsMiB, scanStoreMiB, okOverloadedErrors: counts, scansOpen: scans.size, skipped })}\n`);
  };
  let lastScanRead = 0;
  while (performance.now() < endAt) {
    const now = performance.now();
    if (now >= nextReading) {
      readings.push(residentKiB(pid));
      nextReading += readS * 1000;
    }
    if (now >= nextSample) {
      await sample();
      nextSample += sampleS * 1000;
    }
    if (now - lastScanRead > 2000) {
      lastScanRead = now;
      void readScans();
    }
    const due = Math.floor(((now - startedAt) / 1000) * rate);
    while (n < due) {
      const i = n++;
      const kind = wheel[i % wheel.length]!;
      if (inFlight >= inFlightLimit) {
        skipped++;
        continue;
      }
      inFlight++;
      send[kind](Math.floor(i / wheel.length))
        .catch((e: Error) => `no answer: ${e.message}`)
        .then((outcome) => record(kind, outcome))
        .finally(() => inFlight--);
    }
    await sleep(Math.max(1, 1000 / rate / 2));
  }
  await sample();
  // Scans still open get a minute to finish; what is left is lost.
  const graceEnd = performance.now() + 60_000;
  while ((scans.size > 0 || inFlight > 0) && performance.now() < graceEnd) {
    await readScans();
    await sleep(1000);
  }
  await stopServer(server);
  rmSync(dataDir, { recursive: true, force: true });
  const reference = samples.reduce((best, s) => (Math.abs(s.minute - REFERENCE_MINUTE) < Math.abs(best.minute - REFERENCE_MINUTE) ? s : best));
  const after = samples.filter((s) => s.minute >= reference.minute);
  const worstOf = (kib: (s: (typeof samples)[number]) => number) => Math.round(Math.max(...after.map((s) => Math.abs(kib(s) / kib(reference) - 1))) * 1000) / 10;
  const errors = Object.values(tallies).reduce((a, t) => a + t.errors, 0);
  process.stdout.write(
    `${JSON.stringify({
      summary: true,
      minutes,
      httpThreads,
      rate,
      errors,
      scansLost: scans.size,
      scansDone,
      skipped,
      tallies,
      referenceMinute: Math.round(reference.minute * 10) / 10,
      referenceRssMiB: mib(reference.rssKiB),
      lastRssMiB: mib(samples[samples.length - 1]!.rssKiB),
      worstDeviationPercent: worstOf((s) => s.rssKiB),
      worstPeakDeviationPercent: worstOf((s) => s.peakKiB),
      worstSingleReadingDeviationPercent: worstOf((s) => s.nowKiB),
    })}\n`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`${(error as Error)?.stack ?? String(error)}\n`);
  process.exit(1);
});
