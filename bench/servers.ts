// The servers the benchmark loads, started one at a time on a free port of 127.0.0.1: our service
// (bin/catcomfort-service, as `npm start` and the bundle start it) and the FastAPI, Fastify and Ray Serve peers (bench/peers), each at a
// detector precision; with `freeNetworks` each answers the warm-up photo's result with no decode and
// no network Run, in its own way (us: the echo device, decoding simulated; a peer: PEER_FREE_NETWORKS).
import { randomBytes } from 'node:crypto';
import { execFileSync, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cropNetwork, readManifest } from '../src/packs/pack';
import { benchDir, freePort, log, repoRoot, sleep, spawnTracked, stopChild, tmpDir, type Precision, type ServerName } from './common';
import type { OipProtocol } from './protocols';

export const API_KEY = `bench-${randomBytes(12).toString('hex')}`;

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

export interface Started {
  name: ServerName;
  child: ChildProcess;
  /** POST /v2/predict. */
  url: string;
  /** Our service with gRPC on: its port. */
  grpcPort: number | null;
  description: string;
  output: () => string;
}

/** Where our service takes a protocol's requests for `model` (bench/protocols.ts). */
export function protocolUrl(server: Started, protocol: OipProtocol, model: string): string {
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

export interface ServerOptions {
  precision: Precision;
  /** Our service's settings (CATCOMFORT_*); the peers mirror its batching. */
  settings: Record<string, string>;
  /** The peers' workers or replicas (BENCH_PEER_WORKERS). */
  peerWorkers: number;
  /** The Python peers' interpreter (bench/.venv). */
  python: string | null;
  /** Our service: gRPC on, on a free port. */
  grpc: boolean;
  /** Every answer the warm-up photo's, with no decode and no network Run (the serving layer alone). */
  freeNetworks: boolean;
}

/** Our service's settings that make its networks free: the echo device, decoding simulated. */
const OUR_FREE_NETWORKS = { CATCOMFORT_BENCH_SIMULATE: 'echo', CATCOMFORT_BENCH_SIMULATE_DECODE: 'true' };

export async function startServer(name: ServerName, options: ServerOptions): Promise<Started> {
  const { precision, settings, python, peerWorkers, freeNetworks } = options;
  const port = await freePort();
  const grpcPort = options.grpc ? await freePort() : null;
  const cores = os.availableParallelism();
  const peerIntraOp = process.env.BENCH_PEER_INTRA_OP_THREADS ?? String(Math.max(1, Math.floor(cores / peerWorkers)));
  let command: string;
  let args: string[];
  let env: NodeJS.ProcessEnv;
  let description: string;
  if (name === 'us') {
    // As deployed: through the launcher that holds the service's Node.js settings, with this Node.js first on PATH.
    command = path.join(repoRoot, 'bin/catcomfort-service');
    args = [];
    env = {
      ...process.env,
      PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`,
      ...settings,
      CATCOMFORT_PRECISION: precision,
      CATCOMFORT_HOST: '127.0.0.1',
      CATCOMFORT_PORT: String(port),
      CATCOMFORT_API_KEYS: API_KEY,
      CATCOMFORT_DRAIN_DELAY_MS: '0',
      ...(grpcPort !== null && { CATCOMFORT_GRPC_PORT: String(grpcPort) }),
      ...(freeNetworks && OUR_FREE_NETWORKS),
    };
    const named = { ...settings, ...(freeNetworks && OUR_FREE_NETWORKS) };
    description = `1 process; CATCOMFORT_PRECISION=${precision}, ${Object.entries(named).map(([k, v]) => `${k}=${v}`).join(', ')}${grpcPort !== null ? '; gRPC on (CATCOMFORT_GRPC_PORT)' : ''}`;
  } else {
    const crop = await peerCropNetwork(precision);
    const peerEnv = {
      PEER_API_KEYS: API_KEY,
      PEER_INTRA_OP_THREADS: peerIntraOp,
      PEER_SERVICE_VERSION: '1.0.0',
      PEER_PRECISION: precision,
      ...(crop && { PEER_CROP_NETWORK: crop }),
      ...(freeNetworks && { PEER_FREE_NETWORKS: '1' }),
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
        PEER_WORKERS: String(peerWorkers),
        PEER_MAX_BATCH_SIZE: String(batching.maxBatchSize),
        PEER_MAX_BATCH_DELAY_US: String(batching.maxQueueDelayUs),
      };
      description =
        `PEER_PRECISION=${precision}; ${peerVersions(python!)}; ${peerWorkers} replicas (1 CPU each), @serve.batch max ${batching.maxBatchSize} / ${batching.maxQueueDelayUs} us, ` +
        `crops of a batch in one Run, ORT intra-op threads ${peerIntraOp} per replica`;
    } else if (name === 'fastapi') {
      command = python!;
      args = ['-m', 'uvicorn', 'app:app', '--app-dir', path.join(benchDir, 'peers/fastapi'), '--host', '127.0.0.1', '--port', String(port), '--workers', String(peerWorkers), '--log-level', 'warning', '--no-access-log'];
      env = { ...process.env, ...peerEnv };
      description = `PEER_PRECISION=${precision}; ${peerVersions(python!)}; uvicorn --workers ${peerWorkers} (uvloop, httptools), sync endpoint, ORT intra-op threads ${peerIntraOp} per worker`;
    } else {
      command = process.execPath;
      args = [path.join(benchDir, 'peers/fastify/server.js')];
      env = { ...process.env, ...peerEnv, PEER_HOST: '127.0.0.1', PEER_PORT: String(port), PEER_WORKERS: String(peerWorkers) };
      description = `PEER_PRECISION=${precision}; node:cluster of ${peerWorkers} workers, sharp + onnxruntime-node, ORT intra-op threads ${peerIntraOp} per worker`;
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
  if (freeNetworks && name !== 'us') description += '; PEER_FREE_NETWORKS=1';
  return { name, child, url: `http://127.0.0.1:${port}/v2/predict`, grpcPort, description, output: () => output };
}

export async function post(url: string, body: string | Buffer, headers: Record<string, string> = { 'content-type': 'application/json' }): Promise<{ status: number; json: any }> {
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

export async function waitReady(server: Started, body: string, timeoutS: number): Promise<void> {
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

/** Stops a server and everything it started. */
export function stopServer(server: Started): Promise<void> {
  // Ray's driver shuts its local cluster down on SIGTERM; its actors run in process groups of their own.
  return server.name === 'ray' ? stopChild(server.child, 20_000, true) : stopChild(server.child, 5000);
}
