// `npm run bench`: micro-benchmarks, in-process pipeline throughput, then our HTTP service, the
// FastAPI, Fastify and Ray Serve peers in turn on this machine (127.0.0.1 only), each under the
// same HTTP load, each at the main detector precision (int8 where the pack has it), then at the
// other one for the fp32-vs-int8 comparison (us: every concurrency; peers: one level). Our service's
// main run also loads it over the Open Inference Protocol, REST with binary tensor data and gRPC
// ModelInfer (BENCH_ONLY us-oip, us-grpc), right after its /v2/predict rows, same process and photos.
// Writes bench/results/latest.md, latest.svg and latest.json (or into BENCH_RESULTS_DIR); the peers
// are installed by install-peers.ts on first use, latest.md and latest.svg rendered by report.ts.
// Options (env): BENCH_ONLY, BENCH_DURATION_S, BENCH_WARMUP_S, BENCH_CONCURRENCY,
// BENCH_QUEUE_MAX, BENCH_REQUEST_TIMEOUT_MS, BENCH_PEER_WORKERS, BENCH_INPROCESS_CONCURRENCY,
// BENCH_MICRO_TIME_MS, BENCH_READY_TIMEOUT_S, BENCH_PYTHON, BENCH_PRECISION_COMPARE,
// BENCH_RESULTS_DIR, PEER_PRECISION; see bench/README.md.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config';
import { planBatching } from '../src/packs/batching-plan';
import {
  benchOptions,
  fixturePhotos,
  installCleanup,
  killAllChildrenSync,
  log,
  machineInfo,
  mainHttpPrecision,
  otherPrecision,
  packHasInt8,
  repoRoot,
  resultsDir,
  runCommand,
  SERVER_NAMES,
  tmpDir,
  type BenchOptions,
  type Precision,
  type ServerName,
  type Target,
} from './common';
import { connectGrpc, grpcAnswer, grpcRequestBytes } from './grpc-client';
import type { InprocessResult } from './inprocess';
import { ensureFastifyModules, ensurePythonPeer } from './install-peers';
import { runLoad } from './load';
import type { MicroResult } from './micro';
import { overheadRuns } from './overhead';
import { phonePhotos } from './phone-photos';
import { answerOfOutputs, oipBinaryRequest, predictBody, type Answer, type OipProtocol } from './protocols';
import { protocolLabel, reportChart, reportMarkdown, runLabel, type ProtocolRun, type Report, type ServerRun } from './report';
import { API_KEY, protocolUrl, post, startServer, stopServer, waitReady, type Started } from './servers';
import { streamLatency } from './stream-latency';

/** Passes of the fixture photos in the live stream's latency row (BENCH_ONLY us-stream). */
const STREAM_ROUNDS = 3;


/** BENCH_ONLY's names for our service's OIP protocols, loaded in its main run after its /v2/predict rows. */
const PROTOCOL_TARGETS: Array<[Target, OipProtocol]> = [
  ['us-oip', 'oip-rest'],
  ['us-grpc', 'grpc'],
];

type Photos = Array<{ file: string; bytes: Buffer }>;

/** One request per photo, one after the other: the answer per photo file (the first failure throws, naming its photo). */
async function answersFor(photos: Photos, ask: (photo: Buffer) => Promise<Answer>): Promise<Record<string, Answer>> {
  const answers: Record<string, Answer> = {};
  for (const { file, bytes } of photos) {
    try {
      answers[file] = await ask(bytes);
    } catch (error) {
      throw new Error(`${file}: ${(error as Error).message}`);
    }
  }
  return answers;
}

async function okJson(url: string, request: { body: string | Buffer; headers?: Record<string, string> }): Promise<any> {
  const r = await post(url, request.body, request.headers);
  if (r.status !== 200) throw new Error(`HTTP ${r.status} ${JSON.stringify(r.json)}`);
  return r.json;
}

const predictAnswers = (url: string, photos: Photos) =>
  answersFor(photos, async (photo) => {
    const json = await okJson(url, { body: predictBody(photo) });
    return { detection: json.detection, label: json.prediction?.label ?? null, score: json.prediction?.score ?? null };
  });

async function protocolAnswers(protocol: OipProtocol, url: string, photos: Photos): Promise<Record<string, Answer>> {
  if (protocol === 'oip-rest') {
    return answersFor(photos, async (photo) => {
      const json = await okJson(url, oipBinaryRequest(photo));
      return answerOfOutputs((json.outputs as Array<{ name: string; data: unknown[] }>).map((o) => ({ name: o.name, values: o.data })));
    });
  }
  const target = connectGrpc(url);
  try {
    return await answersFor(photos, (photo) => grpcAnswer(target, photo, API_KEY));
  } finally {
    target.client.close();
  }
}

/** Mean, min and max bytes of what each protocol sends per photo. */
function requestBytes(photos: Photos, model: string): NonNullable<Report['requestBytes']> {
  const sizes = {
    predict: (p: Buffer) => Buffer.byteLength(predictBody(p)),
    'oip-rest': (p: Buffer) => oipBinaryRequest(p).body.length,
    grpc: (p: Buffer) => grpcRequestBytes(p, model),
  };
  return Object.entries(sizes).map(([protocol, size]) => {
    const bytes = photos.map((p) => size(p.bytes));
    return { protocol: protocol as keyof typeof sizes, mean: bytes.reduce((a, b) => a + b, 0) / bytes.length, min: Math.min(...bytes), max: Math.max(...bytes) };
  });
}

/** Our service's rows over one OIP protocol: one request per photo, then the load at every concurrency; a failure is the row's. */
async function protocolRun(server: Started, run: ServerRun, protocol: OipProtocol, model: string, photos: Photos, o: BenchOptions): Promise<ProtocolRun> {
  const label = protocolLabel(run, protocol);
  const url = protocolUrl(server, protocol, model);
  const result: ProtocolRun = { protocol, levels: [], answers: {} };
  try {
    log(`${label}: ${url}; one request per photo`);
    result.answers = await protocolAnswers(protocol, url, photos);
    log(`${label}: load at concurrency ${o.concurrency.join(', ')}`);
    const metricsOrigin = new URL(server.url).origin;
    result.levels = await runLoad({ url, apiKey: API_KEY, concurrency: o.concurrency, durationS: o.durationS, warmupS: o.warmupS, metricsOrigin });
  } catch (error) {
    result.error = (error as Error).message.split('\n').slice(0, 3).join(' ');
    log(`${label} failed: ${(error as Error).message}`);
  }
  return result;
}

// ---- Main

async function runChildScript(script: string, outFile: string, label: string): Promise<void> {
  await runCommand(process.execPath, [path.join(__dirname, script), outFile], { label, echo: true, cwd: repoRoot });
}

/** Runs a bench child script writing JSON to a file: its report, or the first line of its failure. */
async function childReport<T>(script: string, label: string): Promise<{ value: T } | { error: string }> {
  const out = path.join(tmpDir, script.replace(/\.js$/, '.json'));
  try {
    await runChildScript(script, out, label);
    return { value: JSON.parse(readFileSync(out, 'utf8')) as T };
  } catch (error) {
    log(`${label} failed: ${(error as Error).message}`);
    return { error: (error as Error).message.split('\n')[0] ?? '' };
  }
}

async function main(): Promise<void> {
  installCleanup();
  const o = benchOptions();
  mkdirSync(tmpDir, { recursive: true });
  const machine: Report['machine'] = machineInfo();
  const ourConfig = loadConfig({
    ...process.env,
    CATCOMFORT_QUEUE_MAX: process.env.CATCOMFORT_QUEUE_MAX ?? String(o.queueMax),
    CATCOMFORT_REQUEST_TIMEOUT_MS: process.env.CATCOMFORT_REQUEST_TIMEOUT_MS ?? String(o.requestTimeoutMs),
  });
  // The batching the service would choose (batching-plan.ts), written out so the peers mirror it.
  const batching = planBatching(ourConfig.batching, ourConfig.providers.some((p) => p !== 'cpu'), os.availableParallelism()).batching;
  const ourSettings: Record<string, string> = {
    CATCOMFORT_EXECUTION_PROVIDERS: ourConfig.providers.join(','),
    CATCOMFORT_POOL_THREADS: String(ourConfig.poolThreads),
    CATCOMFORT_INTRA_OP_THREADS: String(ourConfig.intraOpThreads),
    CATCOMFORT_BATCH_MAX_SIZE: String(batching.maxBatchSize),
    CATCOMFORT_BATCH_MAX_DELAY_US: String(batching.maxQueueDelayUs),
    CATCOMFORT_BATCH_IN_FLIGHT: String(batching.maxInFlight),
    CATCOMFORT_QUEUE_MAX: String(batching.maxQueue),
    CATCOMFORT_REQUEST_TIMEOUT_MS: String(ourConfig.requestTimeoutMs),
    CATCOMFORT_LOG_LEVEL: 'warn',
  };
  const report: Report = {
    date: new Date().toISOString(),
    machine,
    options: { ...o, only: [...o.only] },
    ourSettings,
    servers: [],
  };
  log(`machine: ${machine.cpu} (${machine.cpuFeatures.join(', ') || 'no AVX2'}), ${machine.cores} cores, Node ${machine.node}; running: ${[...o.only].join(', ')}`);

  if (o.only.has('micro')) {
    log('micro-benchmarks (tinybench, in-process)');
    const r = await childReport<MicroResult>('micro.js', 'micro-benchmarks');
    if ('value' in r) report.micro = r.value;
    else report.microError = r.error;
  }
  if (o.only.has('inprocess')) {
    log(`in-process pipeline throughput at concurrency ${o.inprocessConcurrency.join(', ')}`);
    const r = await childReport<InprocessResult>('inprocess.js', 'in-process benchmark');
    if ('value' in r) report.inprocess = r.value;
    else report.inprocessError = r.error;
  }

  const photos: Photos = fixturePhotos().map((p) => ({ file: p.file, bytes: readFileSync(p.path) }));
  const protocols = PROTOCOL_TARGETS.filter(([target]) => o.only.has(target)).map(([, protocol]) => protocol);
  /** Whether a server runs: us also for its protocol rows alone. */
  const runs = (name: ServerName) => o.only.has(name) || (name === 'us' && (protocols.length > 0 || o.only.has('us-stream')));
  if (protocols.length > 0) report.requestBytes = requestBytes(photos, ourConfig.defaultModel);
  const readyTimeoutS = Number(process.env.BENCH_READY_TIMEOUT_S ?? 600);
  const phone = SERVER_NAMES.some((n) => o.only.has(n)) ? (await phonePhotos()).map((p) => p.path) : [];
  // The main rows run us and the peers at one precision (equal work); with BENCH_PRECISION_COMPARE,
  // each server then runs at the other one too: us at every concurrency (fixture photos), each peer
  // at one level (c=32 when configured, else the highest) as a reference.
  const packDir = path.join(ourConfig.modelsDir, ourConfig.defaultModel);
  const hasInt8 = packHasInt8(packDir);
  let mainPrecision = mainHttpPrecision(packDir);
  if (mainPrecision === 'int8' && !hasInt8) {
    log(`${ourConfig.defaultModel} has no int8 detector (manifest detector.int8): HTTP runs at fp32`);
    mainPrecision = 'fp32';
  }
  const comparePrecision = o.precisionCompare && hasInt8 ? otherPrecision(mainPrecision) : null;
  const peerConcurrency = o.concurrency.includes(32) ? 32 : Math.max(...o.concurrency);
  if (SERVER_NAMES.some(runs)) report.httpPrecision = { main: mainPrecision, compare: comparePrecision, peerConcurrency };
  const plan: Array<{ name: ServerName; precision: Precision; role: ServerRun['role'] }> = [];
  for (const name of SERVER_NAMES) {
    if (!runs(name)) continue;
    plan.push({ name, precision: mainPrecision, role: 'main' });
    if (comparePrecision && o.only.has(name)) plan.push({ name, precision: comparePrecision, role: 'precision' });
  }
  let python: string | null = null;
  for (const { name, precision, role } of plan) {
    const run: ServerRun = { name, precision, role, description: '', levels: [], phoneLevels: [], answers: {}, protocols: [] };
    const ourProtocols = name === 'us' && role === 'main' ? protocols : [];
    report.servers.push(run);
    const label = runLabel(run);
    let server: Started | null = null;
    try {
      if (name === 'fastapi' || name === 'ray') {
        python = await ensurePythonPeer({ python: process.env.BENCH_PYTHON ?? 'python3' }, name === 'ray' ? 'ray-serve' : 'fastapi');
        machine.python = (await runCommand(python, ['--version'])).trim();
      }
      if (name === 'fastify' && role === 'main') await ensureFastifyModules();
      log(`${label}: starting`);
      server = await startServer(name, { precision, settings: ourSettings, peerWorkers: o.peerWorkers, python, grpc: ourProtocols.includes('grpc'), freeNetworks: false });
      run.description = server.description;
      await waitReady(server, predictBody(photos[0]!.bytes), readyTimeoutS);
      log(`${label}: ready at ${server.url}; one request per photo`);
      run.answers = await predictAnswers(server.url, photos);
      const concurrency = role === 'main' || name === 'us' ? o.concurrency : [peerConcurrency];
      if (o.only.has(name)) {
        log(`${label}: load at concurrency ${concurrency.join(', ')}`);
        run.levels = await runLoad({ url: server.url, apiKey: API_KEY, concurrency, durationS: o.durationS, warmupS: o.warmupS });
      }
      for (const protocol of ourProtocols) run.protocols.push(await protocolRun(server, run, protocol, ourConfig.defaultModel, photos, o));
      if (name === 'us' && role === 'main' && o.only.has('us-stream')) {
        log(`${label}: live stream against /v2/predict at one client, ${STREAM_ROUNDS} passes of the photos`);
        run.stream = await streamLatency(new URL(server.url).origin, API_KEY, photos, STREAM_ROUNDS);
      }
      if (role === 'main' && o.only.has(name)) {
        log(`${label}: load with the 12 MP phone photos`);
        run.phoneLevels = await runLoad({ url: server.url, apiKey: API_KEY, concurrency: o.concurrency, durationS: o.durationS, warmupS: o.warmupS, photoPaths: phone });
      }
    } catch (error) {
      run.error = (error as Error).message.split('\n').slice(0, 3).join(' ');
      log(`${label} failed: ${(error as Error).message}`);
    } finally {
      if (server) {
        await stopServer(server);
        log(`${label}: stopped`);
      }
    }
  }

  if (o.only.has('overhead')) {
    log(`serving overhead, networks free: us and every peer at concurrency ${o.overheadConcurrency.join(', ')}`);
    report.overhead = await overheadRuns(o, mainPrecision, ourSettings, predictBody(photos[0]!.bytes), readyTimeoutS);
  }

  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(path.join(resultsDir, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(path.join(resultsDir, 'latest.md'), reportMarkdown(report));
  writeFileSync(path.join(resultsDir, 'latest.svg'), reportChart(report));
  log(`wrote ${path.relative(repoRoot, path.join(resultsDir, 'latest.md'))}, latest.svg, latest.json`);
  const failed = report.microError || report.inprocessError || report.servers.some((s) => s.error || s.protocols.some((p) => p.error)) || report.overhead?.some((r) => r.error);
  if (failed) throw new Error('some benchmarks failed (see above and latest.md)');
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench: ${(error as Error)?.message ?? String(error)}\n`);
    killAllChildrenSync();
    process.exit(1);
  },
);
