// `npm run bench`: micro-benchmarks, in-process pipeline throughput, then our HTTP service, the
// FastAPI, Fastify and Ray Serve peers in turn on this machine (127.0.0.1 only), each under the
// same HTTP load, each at the main detector precision (int8 where the pack has it), then at the
// other one for the fp32-vs-int8 comparison (us: every concurrency; peers: one level).
// Writes bench/results/latest.md, latest.svg and latest.json (or into BENCH_RESULTS_DIR).
// Options (env): BENCH_ONLY, BENCH_DURATION_S, BENCH_WARMUP_S, BENCH_CONCURRENCY,
// BENCH_QUEUE_MAX, BENCH_REQUEST_TIMEOUT_MS, BENCH_PEER_WORKERS, BENCH_INPROCESS_CONCURRENCY,
// BENCH_MICRO_TIME_MS, BENCH_READY_TIMEOUT_S, BENCH_PYTHON, BENCH_PRECISION_COMPARE,
// BENCH_RESULTS_DIR, PEER_PRECISION; see bench/README.md.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config';
import { cropNetwork, readManifest } from '../src/packs/pack';
import {
  benchDir,
  benchOptions,
  fixturePhotos,
  fmt,
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
} from './common';
import type { InprocessResult } from './inprocess';
import { runLoad, type LoadLevel } from './load';
import { microMarkdown, type MicroResult } from './micro';
import { renderChart } from './chart';
import type { GpuUtilisation } from '../src/ops/gpu-sampler';
import { phonePhotos } from './phone-photos';

const SERVER_LABELS: Record<ServerName, string> = {
  us: 'us (uWS + native addon)',
  fastapi: 'FastAPI peer',
  fastify: 'Fastify peer',
  ray: 'Ray Serve peer',
};

/** A server run's name with its detector precision, e.g. "FastAPI peer, int8". */
function runLabel(run: Pick<ServerRun, 'name' | 'precision'>): string {
  return `${SERVER_LABELS[run.name]}, ${run.precision}`;
}

interface Answer {
  detection: string;
  label: string | null;
  score: number | null;
}

interface ServerRun {
  name: ServerName;
  /** Detector precision of this run (CATCOMFORT_PRECISION for us, PEER_PRECISION for the peers). */
  precision: Precision;
  /** main: the rows compared across servers; precision: the same server at the other precision (fp32 vs int8). */
  role: 'main' | 'precision';
  description: string;
  levels: LoadLevel[];
  /** The same load with the 12 MP phone photos (bench/phone-photos.ts). */
  phoneLevels: LoadLevel[];
  /** One request per photo before the load: the answer per photo file. */
  answers: Record<string, Answer>;
  error?: string;
}

interface Report {
  date: string;
  machine: ReturnType<typeof machineInfo> & { python?: string };
  options: Omit<BenchOptions, 'only'> & { only: string[] };
  ourSettings: Record<string, string>;
  /** HTTP: the main rows' precision, the other precision measured (null: none), and the peers' one level at it. */
  httpPrecision?: { main: Precision; compare: Precision | null; peerConcurrency: number };
  micro?: MicroResult;
  microError?: string;
  inprocess?: InprocessResult;
  inprocessError?: string;
  servers: ServerRun[];
}

const API_KEY = `bench-${randomBytes(12).toString('hex')}`;

function sha256File(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

// ---- Peer installation (first use only; stamps remember what was installed).

/** The Python peers' venv (bench/.venv) with the requirements of `peer` installed (the FastAPI peer's first: Ray Serve's run the same pipeline). */
async function ensurePythonPeer(options: { python: string }, peer: 'fastapi' | 'ray-serve'): Promise<string> {
  if (peer !== 'fastapi') await ensurePythonPeer(options, 'fastapi');
  const venv = path.join(benchDir, '.venv');
  const python = path.join(venv, 'bin', 'python');
  const requirements = path.join(benchDir, `peers/${peer}/requirements.txt`);
  const stamp = path.join(venv, `.requirements.${peer}.sha256`);
  const want = sha256File(requirements);
  if (existsSync(python) && existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === want) return python;
  log(`${existsSync(python) ? 'in' : 'creating'} ${path.relative(repoRoot, venv)}: installing ${path.relative(repoRoot, requirements)} (first use)`);
  if (!existsSync(python)) await runCommand(options.python, ['-m', 'venv', venv], { label: 'python3 -m venv' });
  // PIP_RETRIES=0: with only a local wheel store reachable, pip must not spend minutes retrying
  // an unreachable default index before it looks at the others.
  await runCommand(python, ['-m', 'pip', 'install', '--disable-pip-version-check', '-q', '-r', requirements], {
    label: 'pip install',
    env: { ...process.env, PIP_RETRIES: process.env.PIP_RETRIES ?? '0' },
  });
  writeFileSync(stamp, `${want}\n`);
  return python;
}

async function ensureFastifyModules(): Promise<void> {
  const dir = path.join(benchDir, 'peers/fastify');
  const stamp = path.join(dir, 'node_modules/.bench-lock.sha256');
  const want = sha256File(path.join(dir, 'package-lock.json'));
  if (existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === want) return;
  log('installing the Fastify peer: npm ci --prefix bench/peers/fastify (first use)');
  // onnxruntime-node's install script would download GPU binaries; the CPU binary ships in the package.
  // npm_* variables come from `npm run bench` and carry the root project's settings (e.g.
  // build-from-source); the peer is its own project, so its npm reads its own configuration.
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
  await runCommand('npm', ['ci', '--prefix', dir, '--no-audit', '--no-fund'], {
    label: 'npm ci (fastify peer)',
    env: { ...env, ONNXRUNTIME_NODE_INSTALL: 'skip' },
  });
  writeFileSync(stamp, `${want}\n`);
}

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
  url: string;
  description: string;
  output: () => string;
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

async function startServer(name: ServerName, precision: Precision, o: BenchOptions, settings: Record<string, string>, python: string | null): Promise<Started> {
  const port = await freePort();
  const cores = os.availableParallelism();
  const peerIntraOp = process.env.BENCH_PEER_INTRA_OP_THREADS ?? String(Math.max(1, Math.floor(cores / o.peerWorkers)));
  let command: string;
  let args: string[];
  let env: NodeJS.ProcessEnv;
  let description: string;
  if (name === 'us') {
    command = process.execPath;
    args = [path.join(repoRoot, 'dist/src/main.js')];
    env = { ...process.env, ...settings, CATCOMFORT_PRECISION: precision, CATCOMFORT_HOST: '127.0.0.1', CATCOMFORT_PORT: String(port), CATCOMFORT_API_KEYS: API_KEY };
    description = `1 process; CATCOMFORT_PRECISION=${precision}, ${Object.entries(settings).map(([k, v]) => `${k}=${v}`).join(', ')}`;
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
  return { child, url: `http://127.0.0.1:${port}/v2/predict`, description, output: () => output };
}

async function post(url: string, body: string): Promise<{ status: number; json: any }> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'api-key': API_KEY }, body });
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

async function answersFor(url: string, bodies: Array<{ file: string; body: string }>): Promise<Record<string, Answer>> {
  const answers: Record<string, Answer> = {};
  for (const { file, body } of bodies) {
    const r = await post(url, body);
    if (r.status !== 200) throw new Error(`${file}: HTTP ${r.status} ${JSON.stringify(r.json)}`);
    answers[file] = { detection: r.json.detection, label: r.json.prediction?.label ?? null, score: r.json.prediction?.score ?? null };
  }
  return answers;
}

// ---- Report

type LevelsOf = (run: ServerRun) => LoadLevel[];
const fixtureLevels: LevelsOf = (run) => run.levels;
const phoneLevels: LevelsOf = (run) => run.phoneLevels;

function levelOf(run: ServerRun | undefined, c: number, levels: LevelsOf = fixtureLevels): LoadLevel | undefined {
  return run ? levels(run).find((l) => l.concurrency === c) : undefined;
}

function gpuCell(gpu: GpuUtilisation | null | undefined): string {
  return gpu ? `${fmt(gpu.meanPct)} / ${fmt(gpu.maxPct)}` : '–';
}

function ratio(a: number | undefined, b: number | undefined, digits = 2): string {
  if (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0) return '–';
  return `${(a / b).toFixed(digits)}x`;
}

/** Per-server table and our ratios to each peer, for one photo set. */
function httpTables(report: Report, levels: LevelsOf): string[] {
  const lines: string[] = [];
  const servers = report.servers.filter((s) => levels(s).length > 0);
  const gpu = servers.some((s) => levels(s).some((l) => l.gpu));
  lines.push(`| server | concurrency | req/s | p50 ms | p90 ms | p99 ms | non-2xx | of which 429 | errors/timeouts |${gpu ? ' GPU util mean/max % |' : ''}`);
  lines.push(`|---|---:|---:|---:|---:|---:|---:|---:|---:|${gpu ? '---:|' : ''}`);
  for (const s of servers) {
    for (const l of levels(s)) {
      lines.push(
        `| ${runLabel(s)} | ${l.concurrency} | ${fmt(l.rps)} | ${fmt(l.p50Ms)} | ${fmt(l.p90Ms)} | ${fmt(l.p99Ms)} | ${l.non2xx} | ${l.status429} | ${l.errors}/${l.timeouts} |` +
          (gpu ? ` ${gpuCell(l.gpu)} |` : ''),
      );
    }
  }
  lines.push('');
  const us = servers.find((s) => s.name === 'us' && s.role === 'main');
  const peers = servers.filter((s) => s.name !== 'us' && s.role === 'main');
  if (us && peers.length > 0) {
    lines.push('### Us versus the peers', '');
    lines.push(`All at the ${us.precision} detector (equal work). Throughput ratio = our req/s ÷ peer req/s (above 1: we serve more); p50/p99 ratio = peer latency ÷ our latency (above 1: we answer faster).`, '');
    lines.push(`| concurrency | ${peers.map((p) => `throughput vs ${p.name} | p50 vs ${p.name} | p99 vs ${p.name}`).join(' | ')} |`);
    lines.push(`|---:|${peers.map(() => '---:|---:|---:').join('|')}|`);
    for (const c of report.options.concurrency) {
      const ours = levelOf(us, c, levels);
      lines.push(`| ${c} | ${peers.map((p) => { const l = levelOf(p, c, levels); return `${ratio(ours?.rps, l?.rps)} | ${ratio(l?.p50Ms, ours?.p50Ms)} | ${ratio(l?.p99Ms, ours?.p99Ms)}`; }).join(' | ')} |`);
    }
    lines.push('');
  }
  return lines;
}

/** One server's fixture-photo level at a precision (the main or the precision run). */
function runAt(report: Report, name: ServerName, precision: Precision): ServerRun | undefined {
  return report.servers.find((s) => s.name === name && s.precision === precision && s.levels.length > 0);
}

/** The fp32-versus-int8 figures of every part side by side (micro, in-process, HTTP). */
function precisionSummary(report: Report): string[] {
  const rows: string[] = [];
  const speedUp = (fp32: number | undefined, int8: number | undefined, lowerIsBetter: boolean) =>
    lowerIsBetter ? ratio(fp32, int8) : ratio(int8, fp32);
  const micro = report.micro?.rows.filter((r) => r.group.startsWith('detector Run per image, fp32 vs int8')) ?? [];
  const mf = micro.find((r) => r.name === 'fp32');
  const mi = micro.find((r) => r.name === 'int8');
  if (mf && mi) {
    const f = mf.runP50Ms ?? mf.p50Ms;
    const i = mi.runP50Ms ?? mi.p50Ms;
    rows.push(`| micro: detector session Run, batch 1 (p50 ms per image) | ${fmt(f, 2)} | ${fmt(i, 2)} | ${speedUp(f, i, true)} | ≥ 2x |`);
  }
  const bp = report.inprocess?.byPrecision;
  if (bp && 'fp32' in bp) {
    for (const f of bp.fp32) {
      const i = bp.int8.find((l) => l.concurrency === f.concurrency);
      rows.push(`| in-process, c=${f.concurrency} (req/s) | ${fmt(f.rps)} | ${fmt(i?.rps)} | ${speedUp(f.rps, i?.rps, false)} | ≥ 1.8x |`);
    }
  }
  const hp = report.httpPrecision;
  if (hp?.compare) {
    for (const name of SERVER_NAMES) {
      const f = runAt(report, name, 'fp32');
      const i = runAt(report, name, 'int8');
      if (!f || !i) continue;
      const levels = name === 'us' ? [8, 32] : [hp.peerConcurrency];
      for (const c of levels) {
        const lf = levelOf(f, c);
        const li = levelOf(i, c);
        if (!lf || !li) continue;
        rows.push(`| HTTP, ${SERVER_LABELS[name]}, c=${c} (req/s) | ${fmt(lf.rps)} | ${fmt(li.rps)} | ${speedUp(lf.rps, li.rps, false)} | ${name === 'us' ? '≥ 1.7x' : '–'} |`);
      }
    }
  }
  if (rows.length === 0) return [];
  return [
    '## Detector precision: fp32 versus int8', '',
    'The same work at each precision (fixture photos; the int8 detector is the pack\'s QDQ model, `detector.int8` in its manifest). Speed-up = int8 throughput ÷ fp32 throughput (micro: fp32 time ÷ int8 time).', '',
    '| measure | fp32 | int8 | int8 speed-up | target |',
    '|---|---:|---:|---:|---:|',
    ...rows,
    '',
  ];
}

/** HTTP throughput and latency per server at both precisions, where both were run. */
function httpPrecisionTable(report: Report): string[] {
  if (!report.httpPrecision?.compare) return [];
  const lines: string[] = [];
  for (const name of SERVER_NAMES) {
    const f = runAt(report, name, 'fp32');
    const i = runAt(report, name, 'int8');
    if (!f || !i) continue;
    for (const lf of f.levels) {
      const li = levelOf(i, lf.concurrency);
      if (!li) continue;
      lines.push(
        `| ${SERVER_LABELS[name]} | ${lf.concurrency} | ${fmt(lf.rps)} | ${fmt(lf.p50Ms)} | ${fmt(lf.p99Ms)} | ${fmt(li.rps)} | ${fmt(li.p50Ms)} | ${fmt(li.p99Ms)} | ${ratio(li.rps, lf.rps)} |`,
      );
    }
  }
  if (lines.length === 0) return [];
  return [
    '### HTTP, fp32 versus int8 detector', '',
    `Fixture photos, same load at each precision: us at every concurrency, each peer at c=${report.httpPrecision.peerConcurrency} (its fp32 reference run).`, '',
    '| server | concurrency | fp32 req/s | fp32 p50 ms | fp32 p99 ms | int8 req/s | int8 p50 ms | int8 p99 ms | throughput int8/fp32 |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...lines,
    '',
  ];
}

function markdown(report: Report): string {
  const o = report.options;
  const m = report.machine;
  const lines: string[] = [];
  lines.push('# Benchmark results', '');
  lines.push(`- Date: ${report.date}`);
  lines.push(`- Machine: ${m.cpu} (${m.cpuFeatures.join(', ') || 'no AVX2'}), ${m.cores} cores, ${m.memoryGiB} GiB; ${m.platform}; Node ${m.node}${m.python ? `; ${m.python}` : ''}`);
  lines.push(`- Load: autocannon in a separate process on the same machine, 127.0.0.1; ${fixturePhotos().length} fixture photos (cat and no-cat) rotated across requests; ` +
    `${o.warmupS} s warm-up + ${o.durationS} s measured per concurrency level; latency of 2xx responses.`);
  lines.push(`- Our service: ${Object.entries(report.ourSettings).map(([k, v]) => `\`${k}=${v}\``).join(', ')}`);
  for (const s of report.servers) lines.push(`- ${runLabel(s)}: ${s.description}`);
  const hp = report.httpPrecision;
  lines.push(
    `- Detector precision: micro-benchmarks and in-process main rows at the service's (${report.micro?.config.precision ?? report.inprocess?.precision ?? '–'}; \`CATCOMFORT_PRECISION\` or auto)` +
      (hp ? `; HTTP main rows: us and the peers at ${hp.main}${hp.compare ? `, then each at ${hp.compare} (us at every concurrency, the peers at c=${hp.peerConcurrency} only)` : ''}` : '') +
      '.',
  );
  lines.push('');
  lines.push(...precisionSummary(report));

  const servers = report.servers.filter((s) => s.levels.length > 0);
  if (servers.length > 0) {
    lines.push('## HTTP load: POST /v2/predict', '', ...httpTables(report, fixtureLevels));
    if (report.servers.some((s) => s.phoneLevels.length > 0)) {
      lines.push('## HTTP load with 12 MP phone photos', '');
      lines.push('Every fixture photo scaled to about 12 megapixels (4000x3000 for 4:3) as a 4:2:0 JPEG (`bench/phone-photos.ts`), same load otherwise.', '');
      lines.push(...httpTables(report, phoneLevels));
    }
  } else if (report.servers.length === 0) {
    lines.push('_No HTTP load run (BENCH_ONLY)._', '');
  }
  lines.push(...httpPrecisionTable(report));
  for (const s of report.servers.filter((x) => x.error)) lines.push(`**${runLabel(s)} failed:** ${s.error}`, '');

  if (report.inprocess) {
    const ip = report.inprocess;
    lines.push('## In-process pipeline (ModelRegistry / Model.analyze, micro-batcher, no HTTP)', '');
    lines.push(`Batching: max batch ${ip.batching.maxBatchSize}, max delay ${ip.batching.maxQueueDelayUs} µs, in flight ${ip.batching.maxInFlight}, queue ${ip.batching.maxQueue}; pool threads ${ip.poolThreads}, intra-op threads ${ip.intraOpThreads}; base64 strings of the ${ip.photos} photos; ${ip.precision ?? 'fp32'} detector.`, '');
    const gpu = ip.levels.some((l) => l.gpu);
    lines.push(`| concurrency | req/s | p50 ms | p90 ms | p99 ms | failed | batch sizes (size:count) | decode / detect / classify ms (mean) |${gpu ? ' GPU util mean/max % |' : ''}`);
    lines.push(`|---:|---:|---:|---:|---:|---:|---|---:|${gpu ? '---:|' : ''}`);
    for (const l of ip.levels) {
      const sizes = l.batchSizes.map((n, i) => (i > 0 && n > 0 ? `${i}:${n}` : '')).filter(Boolean).join(' ');
      const stages = `${fmt(l.stagesMs.decode, 2)} / ${fmt(l.stagesMs.detect, 2)} / ${fmt(l.stagesMs.classify, 2)}`;
      lines.push(`| ${l.concurrency} | ${fmt(l.rps)} | ${fmt(l.p50Ms)} | ${fmt(l.p90Ms)} | ${fmt(l.p99Ms)} | ${l.failed} | ${sizes} | ${stages} |${gpu ? ` ${gpuCell(l.gpu)} |` : ''}`);
    }
    lines.push('', 'Stage times are what the pipeline reports per request; a batch\'s shared detector and classifier stages count fully for every request in it.');
    lines.push('');
    if (ip.byPrecision && 'fp32' in ip.byPrecision) {
      const bp = ip.byPrecision;
      lines.push('### In-process, fp32 versus int8 detector', '');
      lines.push('The same fixture photos and load at each precision, fp32 measured first (a second registry for the precision the service does not run at).', '');
      lines.push('| concurrency | fp32 req/s | fp32 p50 ms | fp32 detect ms (mean) | int8 req/s | int8 p50 ms | int8 detect ms (mean) | throughput int8/fp32 |');
      lines.push('|---:|---:|---:|---:|---:|---:|---:|---:|');
      for (const f of bp.fp32) {
        const i = bp.int8.find((l) => l.concurrency === f.concurrency);
        lines.push(`| ${f.concurrency} | ${fmt(f.rps)} | ${fmt(f.p50Ms)} | ${fmt(f.stagesMs.detect, 2)} | ${fmt(i?.rps)} | ${fmt(i?.p50Ms)} | ${fmt(i?.stagesMs.detect, 2)} | ${ratio(i?.rps, f.rps)} |`);
      }
      lines.push('');
    } else if (ip.byPrecision && 'note' in ip.byPrecision) lines.push(`_fp32 versus int8 not measured: ${ip.byPrecision.note}._`, '');
    const us = report.servers.find((s) => s.name === 'us' && s.levels.length > 0 && s.precision === (ip.precision ?? 'fp32'));
    if (us) {
      const http32 = levelOf(us, 32);
      const ip32 = ip.levels.find((l) => l.concurrency === 32);
      const http1 = levelOf(us, 1);
      const ip1 = ip.levels.find((l) => l.concurrency === 1);
      lines.push(`At the ${us.precision} detector:`, '');
      lines.push(`- HTTP / in-process throughput at c=32: ${ratio(http32?.rps, ip32?.rps)} (${fmt(http32?.rps)} vs ${fmt(ip32?.rps)} req/s)`);
      lines.push(
        `- Added latency of HTTP at c=1 (our HTTP p50 − in-process p50): ${http1 && ip1 ? `${fmt(http1.p50Ms - ip1.p50Ms, 2)} ms (${fmt(http1.p50Ms, 2)} − ${fmt(ip1.p50Ms, 2)})` : '–'}`,
      );
      lines.push('');
    }
    lines.push('### In-process with 12 MP phone photos: before/after shrink-on-load', '');
    lines.push(`The ${ip.phone.photos} fixture photos scaled to about 12 MP (\`bench/phone-photos.ts\`) as base64 strings; "before": a second registry whose pipelines decode every JPEG at full size (\`jpegShrinkOnLoad: false\`), measured in the same run.`, '');
    lines.push('| concurrency | before: req/s | p50 ms | decode ms (mean) | after: req/s | p50 ms | decode ms (mean) | throughput after/before |');
    lines.push('|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const after of ip.phone.shrinkOnLoad) {
      const before = ip.phone.fullSizeDecode.find((l) => l.concurrency === after.concurrency);
      lines.push(
        `| ${after.concurrency} | ${fmt(before?.rps)} | ${fmt(before?.p50Ms)} | ${fmt(before?.stagesMs.decode)} | ${fmt(after.rps)} | ${fmt(after.p50Ms)} | ${fmt(after.stagesMs.decode)} | ${ratio(after.rps, before?.rps)} |`,
      );
    }
    lines.push('');
  } else if (report.inprocessError) lines.push(`**In-process benchmark failed:** ${report.inprocessError}`, '');

  const withAnswers = report.servers.filter((s) => Object.keys(s.answers).length > 0);
  const usMain = withAnswers.find((s) => s.name === 'us' && s.role === 'main');
  if (usMain && withAnswers.length > 1) {
    lines.push('## Same answers?', '');
    lines.push('Each photo sent once to each server before its load run, compared with our answer at the same detector precision (resizing kernels differ slightly; the ImageNet network under the untrained reference head magnifies a grey level of difference in a crop, so scores can differ by a few tenths while detection states agree); our other precision is compared with our main one.', '');
    lines.push('| server | compared with | same detection state | same label | max abs score difference |', '|---|---|---:|---:|---:|');
    for (const s of withAnswers.filter((x) => x !== usMain)) {
      const ref = s.name === 'us' ? usMain : withAnswers.find((x) => x.name === 'us' && x.precision === s.precision);
      if (!ref) continue;
      let sameDetection = 0;
      let sameLabel = 0;
      let maxDiff = 0;
      const files = Object.keys(ref.answers);
      for (const f of files) {
        const a = ref.answers[f]!;
        const b = s.answers[f];
        if (!b) continue;
        if (a.detection === b.detection) sameDetection++;
        if (a.label === b.label) sameLabel++;
        if (a.score !== null && b.score !== null) maxDiff = Math.max(maxDiff, Math.abs(a.score - b.score));
      }
      lines.push(`| ${runLabel(s)} | ${runLabel(ref)} | ${sameDetection}/${files.length} | ${sameLabel}/${files.length} | ${maxDiff.toFixed(4)} |`);
    }
    lines.push('');
  }

  if (report.micro) lines.push('## Micro-benchmarks (in-process, native addon, tinybench)', '', microMarkdown(report.micro), '');
  else if (report.microError) lines.push(`**Micro-benchmarks failed:** ${report.microError}`, '');
  lines.push('![throughput and p99 latency versus concurrency](latest.svg)', '');
  return lines.join('\n');
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
  const ourSettings: Record<string, string> = {
    CATCOMFORT_EXECUTION_PROVIDERS: ourConfig.providers.join(','),
    CATCOMFORT_POOL_THREADS: String(ourConfig.poolThreads),
    CATCOMFORT_INTRA_OP_THREADS: String(ourConfig.intraOpThreads),
    CATCOMFORT_BATCH_MAX_SIZE: String(ourConfig.batching.maxBatchSize),
    CATCOMFORT_BATCH_MAX_DELAY_US: String(ourConfig.batching.maxQueueDelayUs),
    CATCOMFORT_BATCH_IN_FLIGHT: String(ourConfig.batching.maxInFlight),
    CATCOMFORT_QUEUE_MAX: String(ourConfig.batching.maxQueue),
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

  const photos = fixturePhotos();
  const bodies = photos.map((p) => ({ file: p.file, body: JSON.stringify({ image: readFileSync(p.path).toString('base64') }) }));
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
  if (SERVER_NAMES.some((n) => o.only.has(n))) report.httpPrecision = { main: mainPrecision, compare: comparePrecision, peerConcurrency };
  const plan: Array<{ name: ServerName; precision: Precision; role: ServerRun['role'] }> = [];
  for (const name of SERVER_NAMES) {
    if (!o.only.has(name)) continue;
    plan.push({ name, precision: mainPrecision, role: 'main' });
    if (comparePrecision) plan.push({ name, precision: comparePrecision, role: 'precision' });
  }
  let python: string | null = null;
  for (const { name, precision, role } of plan) {
    const run: ServerRun = { name, precision, role, description: '', levels: [], phoneLevels: [], answers: {} };
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
      server = await startServer(name, precision, o, ourSettings, python);
      run.description = server.description;
      await waitReady(server, bodies[0]!.body, readyTimeoutS);
      log(`${label}: ready at ${server.url}; one request per photo`);
      run.answers = await answersFor(server.url, bodies);
      const concurrency = role === 'main' || name === 'us' ? o.concurrency : [peerConcurrency];
      log(`${label}: load at concurrency ${concurrency.join(', ')}`);
      run.levels = await runLoad({ url: server.url, apiKey: API_KEY, concurrency, durationS: o.durationS, warmupS: o.warmupS });
      if (role === 'main') {
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
  writeFileSync(path.join(resultsDir, 'latest.md'), markdown(report));
  writeFileSync(
    path.join(resultsDir, 'latest.svg'),
    renderChart(
      // Peers' one-level fp32 references are no line; they are in latest.md.
      report.servers.filter((s) => s.levels.length > 1 || (s.levels.length > 0 && s.role === 'main')).map((s) => ({ name: runLabel(s), levels: s.levels })),
      `${machine.cpu} (${machine.cpuFeatures.join(", ") || "no AVX2"}), ${machine.cores} cores · ${report.date.slice(0, 10)}`,
    ),
  );
  log(`wrote ${path.relative(repoRoot, path.join(resultsDir, 'latest.md'))}, latest.svg, latest.json`);
  const failed = report.microError || report.inprocessError || report.servers.some((s) => s.error);
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
