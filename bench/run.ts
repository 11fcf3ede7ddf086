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
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config';
import { planBatching } from '../src/packs/batching-plan';
import { cropNetwork, readManifest } from '../src/packs/pack';
import {
  benchDir,
  benchOptions,
  fixturePhotos,
  freePort,
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
  sleep,
  spawnTracked,
  stopChild,
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
import { phonePhotos } from './phone-photos';
import { answerOfOutputs, oipBinaryRequest, predictBody, type Answer, type OipProtocol } from './protocols';
import { protocolLabel, reportChart, reportMarkdown, runLabel, type ProtocolRun, type Report, type ServerRun } from './report';

const API_KEY = `bench-${randomBytes(12).toString('hex')}`;

/** BENCH_ONLY's names for our service's OIP protocols, loaded in its main run after its /v2/predict rows. */
const PROTOCOL_TARGETS: Array<[Target, OipProtocol]> = [
  ['us-oip', 'oip-rest'],
  ['us-grpc', 'grpc'],
];

// ---- Servers

/** The pack the peers read (their own default, or PEER_MODEL_DIR passed through to them). */
const peerModelDir = process.env.PEER_MODEL_DIR ? path.resolve(process.env.PEER_MODEL_DIR) : path.join(repoRoot, 'models/bc-v1');
const peerCropNetworks = new Map<Precision, string | null>();

/**
 * For a pack whose classifier is an ImageNet backbone + head: the service's crop network at the
 * precision given (src/packs/pack.ts cropNetwork, composed at load there), written once to the
 * bench's tmp folder for the peers (PEER_CROP_NETWORK); null for a pack with a plain classifier file.
 */
async function peerCropNetwork(precision: Precision): Promise<string | null> {
  if (peerCropNetworks.has(precision)) return peerCropNetworks.get(precision)!;
  const manifest = await readManifest(peerModelDir);
  const c = manifest.classifier;
  let file: string | null = null;
  if ('backbone' in c) {
    file = path.join(tmpDir, `crop-network.${manifest.id}.${precision}.onnx`);
    writeFileSync(file, await cropNetwork(peerModelDir, manifest, c, precision));
    log(`peers' crop network (${manifest.id}, ${precision} backbone): ${path.relative(repoRoot, file)}`);
  }
  peerCropNetworks.set(precision, file);
  return file;
}

interface Started {
  child: ChildProcess;
  /** POST /v2/predict. */
  url: string;
  /** Our service with gRPC on: its port. */
  grpcPort: number | null;
  description: string;
  output: () => string;
}

/** Where our service takes a protocol's requests for `model` (bench/protocols.ts). */
function protocolUrl(server: Started, protocol: OipProtocol, model: string): string {
  if (protocol === 'grpc') return `grpc://127.0.0.1:${server.grpcPort}/${encodeURIComponent(model)}`;
  return new URL(`/v2/models/${encodeURIComponent(model)}/infer`, server.url).href;
}

/** The batching our service gets in this run (its CATCOMFORT_BATCH_* settings). */
function settingsBatching(settings: Record<string, string>): { maxBatchSize: number; maxQueueDelayUs: number } {
  return { maxBatchSize: Number(settings.CATCOMFORT_BATCH_MAX_SIZE), maxQueueDelayUs: Number(settings.CATCOMFORT_BATCH_MAX_DELAY_US) };
}

/** Versions of a Python peer's main packages, e.g. "FastAPI 0.142.2, Ray 2.58.0, onnxruntime 1.30.0". */
function peerVersions(python: string): string {
  const script = 'import importlib.metadata as m\nfor p in ("fastapi", "uvicorn", "ray", "onnxruntime", "pillow", "numpy"):\n    try: print(p, m.version(p))\n    except m.PackageNotFoundError: pass';
  return execFileSync(python, ['-c', script], { encoding: 'utf8' }).trim().split('\n').join(', ');
}

async function startServer(name: ServerName, precision: Precision, o: BenchOptions, settings: Record<string, string>, python: string | null, grpc: boolean): Promise<Started> {
  const port = await freePort();
  const grpcPort = grpc ? await freePort() : null;
  const cores = os.availableParallelism();
  const peerIntraOp = process.env.BENCH_PEER_INTRA_OP_THREADS ?? String(Math.max(1, Math.floor(cores / o.peerWorkers)));
  let command: string;
  let args: string[];
  let env: NodeJS.ProcessEnv;
  let description: string;
  if (name === 'us') {
    command = process.execPath;
    args = [path.join(repoRoot, 'dist/src/main.js')];
    env = {
      ...process.env,
      ...settings,
      CATCOMFORT_PRECISION: precision,
      CATCOMFORT_HOST: '127.0.0.1',
      CATCOMFORT_PORT: String(port),
      CATCOMFORT_API_KEYS: API_KEY,
      CATCOMFORT_DRAIN_DELAY_MS: '0',
      ...(grpcPort !== null && { CATCOMFORT_GRPC_PORT: String(grpcPort) }),
    };
    description = `1 process; CATCOMFORT_PRECISION=${precision}, ${Object.entries(settings).map(([k, v]) => `${k}=${v}`).join(', ')}${grpcPort !== null ? '; gRPC on (CATCOMFORT_GRPC_PORT)' : ''}`;
  } else {
    const crop = await peerCropNetwork(precision);
    const peerEnv = {
      PEER_API_KEYS: API_KEY,
      PEER_INTRA_OP_THREADS: peerIntraOp,
      PEER_SERVICE_VERSION: '1.0.0',
      PEER_PRECISION: precision,
      ...(crop && { PEER_CROP_NETWORK: crop }),
    };
    if (name === 'ray') {
      // Batches as our micro-batcher does: the pack's batching section, else the service's settings.
      const batching = { ...settingsBatching(settings), ...((await readManifest(peerModelDir)).batching ?? {}) };
      command = python!;
      args = [path.join(benchDir, 'peers/ray-serve/serve_app.py')];
      env = {
        ...process.env,
        ...peerEnv,
        PEER_HOST: '127.0.0.1',
        PEER_PORT: String(port),
        PEER_WORKERS: String(o.peerWorkers),
        PEER_MAX_BATCH_SIZE: String(batching.maxBatchSize),
        PEER_MAX_BATCH_DELAY_US: String(batching.maxQueueDelayUs),
      };
      description =
        `PEER_PRECISION=${precision}; ${peerVersions(python!)}; ${o.peerWorkers} replicas (1 CPU each), @serve.batch max ${batching.maxBatchSize} / ${batching.maxQueueDelayUs} us, ` +
        `crops of a batch in one Run, ORT intra-op threads ${peerIntraOp} per replica`;
    } else if (name === 'fastapi') {
      command = python!;
      args = ['-m', 'uvicorn', 'app:app', '--app-dir', path.join(benchDir, 'peers/fastapi'), '--host', '127.0.0.1', '--port', String(port), '--workers', String(o.peerWorkers), '--log-level', 'warning', '--no-access-log'];
      env = { ...process.env, ...peerEnv };
      description = `PEER_PRECISION=${precision}; ${peerVersions(python!)}; uvicorn --workers ${o.peerWorkers} (uvloop, httptools), sync endpoint, ORT intra-op threads ${peerIntraOp} per worker`;
    } else {
      command = process.execPath;
      args = [path.join(benchDir, 'peers/fastify/server.js')];
      env = { ...process.env, ...peerEnv, PEER_HOST: '127.0.0.1', PEER_PORT: String(port), PEER_WORKERS: String(o.peerWorkers) };
      description = `PEER_PRECISION=${precision}; node:cluster of ${o.peerWorkers} workers, sharp + onnxruntime-node, ORT intra-op threads ${peerIntraOp} per worker`;
    }
  }
  const child = spawnTracked(command, args, { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
    if (output.length > 100_000) output = output.slice(-50_000);
  };
  child.stdout!.on('data', collect);
  child.stderr!.on('data', collect);
  return { child, url: `http://127.0.0.1:${port}/v2/predict`, grpcPort, description, output: () => output };
}

async function post(url: string, body: string | Buffer, headers: Record<string, string> = { 'content-type': 'application/json' }): Promise<{ status: number; json: any }> {
  const response = await fetch(url, { method: 'POST', headers: { ...headers, 'api-key': API_KEY }, body: typeof body === 'string' ? body : new Uint8Array(body) });
  const text = await response.text();
  let json: unknown = null;
  try {
    json = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: response.status, json };
}

async function waitReady(server: Started, body: string, timeoutS: number): Promise<void> {
  const deadline = Date.now() + timeoutS * 1000;
  while (Date.now() < deadline) {
    if (server.child.exitCode !== null || server.child.signalCode !== null) {
      throw new Error(`server exited during start-up (${server.child.signalCode ?? server.child.exitCode}):\n${server.output().slice(-3000)}`);
    }
    try {
      const r = await post(server.url, body);
      if (r.status === 200) return;
      // 503: starting (us); 404: Ray Serve's proxy is up but the application is not deployed yet.
      if (r.status !== 503 && r.status !== 404) throw new Error(`readiness request answered ${r.status}: ${JSON.stringify(r.json)}`);
    } catch (error) {
      if (!(error instanceof TypeError)) throw error; // TypeError: connection refused, not up yet
    }
    await sleep(250);
  }
  throw new Error(`server not ready within ${timeoutS}s:\n${server.output().slice(-3000)}`);
}

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
  const runs = (name: ServerName) => o.only.has(name) || (name === 'us' && protocols.length > 0);
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
      server = await startServer(name, precision, o, ourSettings, python, ourProtocols.includes('grpc'));
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
      if (role === 'main' && o.only.has(name)) {
        log(`${label}: load with the 12 MP phone photos`);
        run.phoneLevels = await runLoad({ url: server.url, apiKey: API_KEY, concurrency: o.concurrency, durationS: o.durationS, warmupS: o.warmupS, photoPaths: phone });
      }
    } catch (error) {
      run.error = (error as Error).message.split('\n').slice(0, 3).join(' ');
      log(`${label} failed: ${(error as Error).message}`);
    } finally {
      if (server) {
        // Ray's driver shuts its local cluster down on SIGTERM; its actors run in process groups of their own.
        await stopChild(server.child, name === 'ray' ? 20_000 : 5000, name === 'ray');
        log(`${label}: stopped`);
      }
    }
  }

  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(path.join(resultsDir, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(path.join(resultsDir, 'latest.md'), reportMarkdown(report));
  writeFileSync(path.join(resultsDir, 'latest.svg'), reportChart(report));
  log(`wrote ${path.relative(repoRoot, path.join(resultsDir, 'latest.md'))}, latest.svg, latest.json`);
  const failed = report.microError || report.inprocessError || report.servers.some((s) => s.error || s.protocols.some((p) => p.error));
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
