// Shared helpers of the benchmark suite: paths, the fixture photos, options from BENCH_* env
// variables, percentiles, free ports, and child processes that are always cleaned up.
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { sharedDirFrom } from '../src/config';
import { cpuFeatures } from '../src/native/cpu-features';

/** Repository root (this file runs from dist/bench/). */
export const repoRoot = path.resolve(__dirname, '../..');
export const benchDir = path.join(repoRoot, 'bench');
/** Where latest.md, latest.svg and latest.json go (BENCH_RESULTS_DIR, e.g. a temp folder for a short trial run). */
export const resultsDir = process.env.BENCH_RESULTS_DIR ? path.resolve(process.env.BENCH_RESULTS_DIR) : path.join(benchDir, 'results');
/** Scratch folder for per-step JSON handed between processes (gitignored). */
export const tmpDir = path.join(benchDir, 'results', 'tmp');
/** The shared fixtures folder (CATCOMFORT_SHARED_DIR). */
export const sharedDir = sharedDirFrom();
export const photosDir = path.join(sharedDir, 'fixtures/photos');

export interface Photo {
  file: string;
  path: string;
  group: 'cat' | 'nocat';
  width: number;
  height: number;
  sha256: string;
}

/** Every cat and no-cat photo listed in the shared fixtures manifest, in manifest order. */
export function fixturePhotos(): Photo[] {
  const manifestFile = path.join(photosDir, 'manifest.json');
  let manifest: { images: Array<{ file: string; group: string; width: number; height: number; sha256: string }> };
  try {
    manifest = JSON.parse(readFileSync(manifestFile, 'utf8'));
  } catch (error) {
    throw new Error(
      `Cannot read the fixture photos manifest ${manifestFile} (${(error as Error).message}); ` +
        'set CATCOMFORT_SHARED_DIR to the folder that holds fixtures/photos/',
    );
  }
  return manifest.images
    .filter((i) => i.group === 'cat' || i.group === 'nocat')
    .map((i) => ({ file: i.file, path: path.join(photosDir, i.file), group: i.group as 'cat' | 'nocat', width: i.width, height: i.height, sha256: i.sha256 }));
}

/** The photo that the size-scaled micro-benchmark JPEGs are made from (640x480, two cats). */
export const SIZE_SOURCE_PHOTO = '041_ggoni_cats_couch.jpg';

/** BENCH_ONLY's names; us-oip and us-grpc: our service's OIP REST (binary) and gRPC rows, beside its /v2/predict rows. */
export type Target = 'micro' | 'inprocess' | 'us' | 'us-oip' | 'us-grpc' | 'us-stream' | 'fastapi' | 'fastify' | 'ray' | 'overhead';
export const ALL_TARGETS: Target[] = ['micro', 'inprocess', 'us', 'us-oip', 'us-grpc', 'us-stream', 'fastapi', 'fastify', 'ray', 'overhead'];
export type ServerName = 'us' | 'fastapi' | 'fastify' | 'ray';
export const SERVER_NAMES: ServerName[] = ['us', 'fastapi', 'fastify', 'ray'];

/** Detector precision of a run (PackLimits.precision, CATCOMFORT_PRECISION, the peers' PEER_PRECISION). */
export type Precision = 'int8' | 'fp32';
export const PRECISIONS: Precision[] = ['fp32', 'int8'];

export function otherPrecision(p: Precision): Precision {
  return p === 'int8' ? 'fp32' : 'int8';
}

/** Whether the pack in `packDir` has an int8 detector (manifest `detector.int8`). */
export function packHasInt8(packDir: string): boolean {
  try {
    return Boolean(JSON.parse(readFileSync(path.join(packDir, 'manifest.json'), 'utf8'))?.detector?.int8?.file);
  } catch {
    return false;
  }
}

function precisionEnv(name: string): Precision | undefined {
  const raw = process.env[name]?.trim().toLowerCase();
  if (!raw) return undefined;
  if (raw !== 'int8' && raw !== 'fp32') throw new Error(`${name} must be int8 or fp32, got "${process.env[name]}"`);
  return raw;
}

/**
 * The precision of the HTTP runs' main rows, one for us and the peers alike (equal work):
 * PEER_PRECISION, else CATCOMFORT_PRECISION, else int8 where the pack has it, else fp32.
 */
export function mainHttpPrecision(packDir: string): Precision {
  const wanted = precisionEnv('PEER_PRECISION') ?? precisionEnv('CATCOMFORT_PRECISION');
  if (wanted) return wanted;
  return packHasInt8(packDir) ? 'int8' : 'fp32';
}

export interface BenchOptions {
  durationS: number;
  warmupS: number;
  concurrency: number[];
  only: Set<Target>;
  /** CATCOMFORT_QUEUE_MAX given to our service during the load runs. */
  queueMax: number;
  /** CATCOMFORT_REQUEST_TIMEOUT_MS given to our service during the load runs. */
  requestTimeoutMs: number;
  /** Worker processes of each peer (uvicorn workers, Node cluster workers). */
  peerWorkers: number;
  /** In-process pipeline throughput: concurrency levels. */
  inprocessConcurrency: number[];
  /** tinybench time per task, ms. */
  microTimeMs: number;
  /** BENCH_PRECISION_COMPARE: measure the other detector precision too (fp32 next to int8). */
  precisionCompare: boolean;
  /** The serving-overhead table (networks free): concurrency levels. */
  overheadConcurrency: number[];
}

function intEnv(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < min || value > max) throw new Error(`${name} must be a number between ${min} and ${max}, got "${raw}"`);
  return value;
}

function listEnv(name: string, fallback: number[]): number[] {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const values = raw.split(',').map((s) => Number(s.trim()));
  if (values.some((v) => !Number.isInteger(v) || v < 1 || v > 4096)) throw new Error(`${name} must be a comma-separated list of integers 1..4096, got "${raw}"`);
  return values;
}

export function benchOptions(): BenchOptions {
  const onlyRaw = process.env.BENCH_ONLY?.trim();
  const only = new Set<Target>();
  if (!onlyRaw) ALL_TARGETS.forEach((t) => only.add(t));
  else {
    for (const name of onlyRaw.split(',').map((s) => s.trim().toLowerCase()).filter(Boolean)) {
      if (!ALL_TARGETS.includes(name as Target)) throw new Error(`BENCH_ONLY: unknown "${name}" (known: ${ALL_TARGETS.join(', ')})`);
      only.add(name as Target);
    }
  }
  return {
    durationS: intEnv('BENCH_DURATION_S', 8, 1, 3600),
    warmupS: intEnv('BENCH_WARMUP_S', 2, 0, 600),
    concurrency: listEnv('BENCH_CONCURRENCY', [1, 8, 32, 128]),
    only,
    queueMax: intEnv('BENCH_QUEUE_MAX', 256, 1, 100_000),
    requestTimeoutMs: intEnv('BENCH_REQUEST_TIMEOUT_MS', 30_000, 1, 3_600_000),
    peerWorkers: intEnv('BENCH_PEER_WORKERS', Math.max(1, os.availableParallelism()), 1, 256),
    inprocessConcurrency: listEnv('BENCH_INPROCESS_CONCURRENCY', [1, 32]),
    microTimeMs: intEnv('BENCH_MICRO_TIME_MS', 1500, 50, 600_000),
    precisionCompare: intEnv('BENCH_PRECISION_COMPARE', 1, 0, 1) === 1,
    overheadConcurrency: listEnv('BENCH_OVERHEAD_CONCURRENCY', [1, 32, 256]),
  };
}

/** Nearest-rank percentile of an ascending-sorted array. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function machineInfo(): { cpu: string; cpuFeatures: string[]; cores: number; memoryGiB: number; node: string; platform: string } {
  const cpus = os.cpus();
  let cpu = cpus[0]?.model?.trim() ?? 'unknown';
  try {
    // Some VMs report a bare family name in os.cpus(); /proc/cpuinfo may say more.
    const line = readFileSync('/proc/cpuinfo', 'utf8').split('\n').find((l) => l.startsWith('model name'));
    if (line) cpu = line.split(':')[1]!.trim();
  } catch {
    /* not Linux */
  }
  return {
    cpu,
    cpuFeatures: cpuFeatures(),
    cores: os.availableParallelism(),
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
  };
}

// ---- Child processes: every one started here is tracked and killed on exit, error or signal.

const children = new Set<ChildProcess>();

/** Spawns a child in its own process group (so its own children go with it) and tracks it. */
export function spawnTracked(command: string, args: string[], options: SpawnOptions): ChildProcess {
  const child = spawn(command, args, { ...options, detached: true });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      /* already gone */
    }
  }
}

/**
 * SIGTERM to the child's group (with `leaderOnly`, to the child alone: it stops its own children,
 * as Ray's driver stops its local cluster), SIGKILL to the group after graceMs; resolves when it has exited.
 */
export async function stopChild(child: ChildProcess, graceMs = 5000, leaderOnly = false): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) {
    killGroup(child, 'SIGKILL'); // leftovers of its group (e.g. uvicorn workers), if any
    return;
  }
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  if (leaderOnly) child.kill('SIGTERM');
  else killGroup(child, 'SIGTERM');
  const timer = setTimeout(() => killGroup(child, 'SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
  killGroup(child, 'SIGKILL');
}

/** Synchronous last resort (process 'exit' handlers cannot wait). */
export function killAllChildrenSync(): void {
  for (const child of children) killGroup(child, 'SIGKILL');
}

let cleanupInstalled = false;
export function installCleanup(): void {
  if (cleanupInstalled) return;
  cleanupInstalled = true;
  process.on('exit', killAllChildrenSync);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      process.stderr.write(`\nbench: ${signal}, stopping child processes\n`);
      killAllChildrenSync();
      process.exit(130);
    });
  }
}

/** Runs a command to completion; rejects on a non-zero exit with the tail of its output. */
export function runCommand(command: string, args: string[], options: SpawnOptions & { label?: string; echo?: boolean } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawnTracked(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const collect = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.length > 200_000) output = output.slice(-100_000);
      if (options.echo) process.stderr.write(chunk);
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (code === 0) resolve(output);
      else reject(new Error(`${options.label ?? command} failed (${signal ?? `exit ${code}`}):\n${output.slice(-4000)}`));
    });
  });
}

export function log(message: string): void {
  const t = new Date().toISOString().slice(11, 19);
  process.stderr.write(`[bench ${t}] ${message}\n`);
}

export function fmt(value: number | null | undefined, digits = 1): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '–';
  return value.toFixed(digits);
}
