// Service configuration from CATCOMFORT_* environment variables, read here and nowhere else: the
// service's Config, and the small readers the CLI, the installer, the tools and the health check
// use (modelsDirFrom, modelMirrorFrom, sharedDirFrom, storeLocationFrom, listenAddressFrom). Every
// variable is documented in README.md; invalid values stop start-up with a message naming it.
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { trustedProxyEntryError } from './http/front/client-address';
import { POOL_DEFAULTS } from './http/front/upstream-pool';
import type { CudnnConvAlgoSearch } from './native/addon';
import { DEFAULT_RETRY_SCHEDULE, parseRetrySchedule } from './scan/webhooks/schedule';

export type ProviderName = 'tensorrt' | 'cuda' | 'cpu';

export interface Config {
  host: string;
  port: number;
  /** Configured keys; empty means "generate one at start". */
  apiKeys: string[];
  modelsDir: string;
  defaultModel: string;
  providers: ProviderName[];
  deviceId: number;
  trtCacheDir: string;
  trtFp16: boolean;
  cudnnConvAlgoSearch: CudnnConvAlgoSearch;
  /** Stage session tensors in the GPU provider's pinned host memory when it offers it. */
  pinnedMemory: boolean;
  /** Detector precision; null = int8 on CPU where a pack has it, fp32 on GPU providers. */
  precision: 'int8' | 'fp32' | null;
  /** Longest a provider probe child may take before its provider is disabled. */
  providerProbeTimeoutMs: number;
  poolThreads: number;
  intraOpThreads: number;
  /** Images per ONNX Runtime Run; null = chosen at start from the active providers. */
  sessionBatch: number | null;
  maxBodyBytes: number;
  maxPixels: number;
  front: FrontConfig;
  batching: BatchingConfig;
  requestTimeoutMs: number;
  video: VideoConfig;
  legacy: { deprecatedSince: Date; sunset: Date | null };
  buildNumber: string;
  scan: ScanConfig;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  metrics: MetricsConfig;
  admin: AdminConfig;
}

/** The settings that set up the runtime and load the packs (the provider probe child gets them as JSON). */
export type RuntimeConfig = Pick<
  Config,
  | 'providers'
  | 'deviceId'
  | 'trtCacheDir'
  | 'trtFp16'
  | 'cudnnConvAlgoSearch'
  | 'pinnedMemory'
  | 'precision'
  | 'providerProbeTimeoutMs'
  | 'poolThreads'
  | 'intraOpThreads'
  | 'sessionBatch'
  | 'modelsDir'
  | 'maxPixels'
  | 'batching'
>;

export interface MetricsConfig {
  /** GET /metrics on the service port: behind the API key, open to all, or not served. */
  access: 'key' | 'open' | 'off';
  /** A second listener (same host) serving only GET /metrics, unauthenticated; null = none. */
  port: number | null;
}

export interface FrontConfig {
  /** Connections from the HTTP front to uWS at most; requests beyond them wait for one. */
  upstreamConnections: number;
  /** Requests waiting for a connection to uWS at most; more get 429. */
  upstreamQueue: number;
  /** Peers (addresses, CIDRs) whose Forwarded / X-Forwarded-For name the client. */
  trustedProxies: string[];
}

export interface BatchingConfig {
  maxBatchSize: number;
  maxQueueDelayUs: number;
  maxQueue: number;
  maxInFlight: number;
}

export interface VideoConfig {
  /** null: no ffmpeg here (CATCOMFORT_FFMPEG unset and its npm package absent); video requests then get a clear error. */
  ffmpegPath: string | null;
  /** ffmpeg children at once; more video requests get 429. */
  concurrency: number;
  maxSeconds: number;
  maxFrames: number;
  wallTimeMs: number;
  memoryBytes: number;
}

export interface AdminConfig {
  /** The admin listener's port; null: no admin listener. */
  port: number | null;
  host: string;
  /** CATCOMFORT_ADMIN_KEYS; keys issued with `keys create --admin` come from the store. */
  keys: string[];
  /** How often an instance converges to the pack versions recorded in the store. */
  syncMs: number;
  /** How long a previous version stays loaded after a promotion or rollback; 0: until unloaded. */
  keepPreviousMs: number;
}

export interface ScanConfig {
  dataDir: string;
  databaseUrl: string | null;
  model: string;
  workers: number;
  leaseMs: number;
  maxAttempts: number;
  retentionMs: number;
  /** Failed credential checks per client address and minute before its attempts get 429. */
  authFailuresPerMinute: number;
  /** UNSAFE: lets scan URLs reach private and loopback addresses (tests, local development). */
  allowPrivateUrls: boolean;
  webhooks: WebhookConfig;
}

export interface WebhookConfig {
  /** Attempts in flight in this instance at most; 0: this instance delivers none. */
  concurrency: number;
  /** Attempts in flight to one callback URL at most (per instance). */
  perReceiver: number;
  /** Limit of one attempt, from connecting to the end of the answer. */
  timeoutMs: number;
  /** Waits after failed attempts 1..n, in ms. */
  retrySchedule: number[];
}

export class ConfigError extends Error {}

/** Every CATCOMFORT_* variable the service, its tools and its tests read (README lists them). */
export const KNOWN_VARIABLES = [
  'CATCOMFORT_HOST',
  'CATCOMFORT_PORT',
  'CATCOMFORT_API_KEYS',
  'CATCOMFORT_MODELS_DIR',
  'CATCOMFORT_DEFAULT_MODEL',
  'CATCOMFORT_MODEL_MIRROR',
  'CATCOMFORT_EXECUTION_PROVIDERS',
  'CATCOMFORT_PROVIDER_PROBE_TIMEOUT_MS',
  'CATCOMFORT_CUDNN_CONV_ALGO_SEARCH',
  'CATCOMFORT_CUDA_DEVICE_ID',
  'CATCOMFORT_TRT_CACHE_DIR',
  'CATCOMFORT_TRT_FP16',
  'CATCOMFORT_PINNED_MEMORY',
  'CATCOMFORT_PRECISION',
  'CATCOMFORT_POOL_THREADS',
  'CATCOMFORT_INTRA_OP_THREADS',
  'CATCOMFORT_SESSION_BATCH',
  'CATCOMFORT_MAX_BODY_BYTES',
  'CATCOMFORT_MAX_PIXELS',
  'CATCOMFORT_UPSTREAM_CONNECTIONS',
  'CATCOMFORT_UPSTREAM_QUEUE',
  'CATCOMFORT_TRUSTED_PROXIES',
  'CATCOMFORT_BATCH_MAX_SIZE',
  'CATCOMFORT_BATCH_MAX_DELAY_US',
  'CATCOMFORT_QUEUE_MAX',
  'CATCOMFORT_BATCH_IN_FLIGHT',
  'CATCOMFORT_REQUEST_TIMEOUT_MS',
  'CATCOMFORT_LOG_LEVEL',
  'CATCOMFORT_METRICS',
  'CATCOMFORT_METRICS_PORT',
  'CATCOMFORT_BUILD_NUMBER',
  'CATCOMFORT_LEGACY_DEPRECATED_SINCE',
  'CATCOMFORT_LEGACY_SUNSET',
  'CATCOMFORT_FFMPEG',
  'CATCOMFORT_VIDEO_CONCURRENCY',
  'CATCOMFORT_VIDEO_MAX_SECONDS',
  'CATCOMFORT_VIDEO_MAX_FRAMES',
  'CATCOMFORT_VIDEO_TIMEOUT_MS',
  'CATCOMFORT_VIDEO_MEMORY_MB',
  'CATCOMFORT_DATA_DIR',
  'CATCOMFORT_DATABASE_URL',
  'CATCOMFORT_SCAN_MODEL',
  'CATCOMFORT_SCAN_WORKERS',
  'CATCOMFORT_SCAN_LEASE_MS',
  'CATCOMFORT_SCAN_MAX_ATTEMPTS',
  'CATCOMFORT_SCAN_RETENTION_HOURS',
  'CATCOMFORT_SCAN_AUTH_FAILURES_PER_MINUTE',
  'CATCOMFORT_FETCH_ALLOW_PRIVATE',
  'CATCOMFORT_ADMIN_PORT',
  'CATCOMFORT_ADMIN_HOST',
  'CATCOMFORT_ADMIN_KEYS',
  'CATCOMFORT_PACK_SYNC_MS',
  'CATCOMFORT_PREVIOUS_VERSION_KEEP_MINUTES',
  // The catcomfort packs command.
  'CATCOMFORT_ADMIN_URL',
  'CATCOMFORT_ADMIN_KEY',
  'CATCOMFORT_WEBHOOK_CONCURRENCY',
  'CATCOMFORT_WEBHOOK_PER_RECEIVER',
  'CATCOMFORT_WEBHOOK_TIMEOUT_MS',
  'CATCOMFORT_WEBHOOK_RETRY_SCHEDULE',
  // Tests and their fixtures only.
  'CATCOMFORT_TEST_DATABASE_URL',
  'CATCOMFORT_TEST_PG_BIN',
  'CATCOMFORT_SHARED_DIR',
  'CATCOMFORT_PHOTOS',
] as const;

type Env = Record<string, string | undefined>;

function readInt(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${name} must be an integer, got "${raw}"`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`);
  return value;
}

function readBool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${env[name]}"`);
}

function readProviders(env: Env): ProviderName[] {
  const raw = env.CATCOMFORT_EXECUTION_PROVIDERS ?? 'cpu';
  const names = raw.split(',').map((s) => s.trim().toLowerCase()).filter((s) => s !== '');
  const known: ProviderName[] = ['tensorrt', 'cuda', 'cpu'];
  for (const name of names) {
    if (!known.includes(name as ProviderName)) {
      throw new ConfigError(`CATCOMFORT_EXECUTION_PROVIDERS: unknown provider "${name}" (known: ${known.join(', ')})`);
    }
  }
  const ordered = [...new Set(names as ProviderName[])];
  if (!ordered.includes('cpu')) ordered.push('cpu');
  return ordered;
}

function readCudnnConvAlgoSearch(env: Env): CudnnConvAlgoSearch {
  const raw = (env.CATCOMFORT_CUDNN_CONV_ALGO_SEARCH ?? 'HEURISTIC').trim().toUpperCase();
  if (raw === 'EXHAUSTIVE' || raw === 'HEURISTIC' || raw === 'DEFAULT') return raw;
  throw new ConfigError(`CATCOMFORT_CUDNN_CONV_ALGO_SEARCH must be EXHAUSTIVE, HEURISTIC or DEFAULT, got "${env.CATCOMFORT_CUDNN_CONV_ALGO_SEARCH}"`);
}

function readDate(env: Env, name: string, fallback: string | null): Date | null {
  const raw = env[name] ?? fallback;
  if (raw === null || raw.trim() === '') return null;
  const date = new Date(raw);
  if (Number.isNaN(date.getTime())) throw new ConfigError(`${name} must be an ISO 8601 date, got "${raw}"`);
  return date;
}

function readPrecision(env: Env): Config['precision'] {
  const raw = env.CATCOMFORT_PRECISION?.trim().toLowerCase();
  if (raw === undefined || raw === '') return null;
  if (raw === 'int8' || raw === 'fp32') return raw;
  throw new ConfigError(`CATCOMFORT_PRECISION must be int8 or fp32, got "${env.CATCOMFORT_PRECISION}"`);
}

function readTrustedProxies(env: Env): string[] {
  const entries = (env.CATCOMFORT_TRUSTED_PROXIES ?? '').split(',').map((e) => e.trim()).filter((e) => e !== '');
  for (const entry of entries) {
    const error = trustedProxyEntryError(entry);
    if (error) throw new ConfigError(`CATCOMFORT_TRUSTED_PROXIES: ${error}`);
  }
  return entries;
}

function readKeys(env: Env, name = 'CATCOMFORT_API_KEYS'): string[] {
  const raw = env[name];
  if (raw === undefined) return [];
  const keys = raw.split(',').map((k) => k.trim()).filter((k) => k !== '');
  for (const key of keys) {
    if (!/^[\x21-\x7e]{16,256}$/.test(key)) {
      throw new ConfigError(`${name}: each key must be 16-256 printable ASCII characters without spaces`);
    }
  }
  return keys;
}

function readAdmin(env: Env, publicPort: number): AdminConfig {
  const port = env.CATCOMFORT_ADMIN_PORT?.trim() ? readInt(env, 'CATCOMFORT_ADMIN_PORT', 0, 0, 65535) : null;
  if (port !== null && port !== 0 && port === publicPort) throw new ConfigError('CATCOMFORT_ADMIN_PORT must differ from CATCOMFORT_PORT: the admin listener never shares the public port');
  const keys = readKeys(env, 'CATCOMFORT_ADMIN_KEYS');
  const apiKeys = new Set(readKeys(env));
  if (keys.some((k) => apiKeys.has(k))) throw new ConfigError('CATCOMFORT_ADMIN_KEYS: a key may not also be in CATCOMFORT_API_KEYS');
  return {
    port,
    host: env.CATCOMFORT_ADMIN_HOST?.trim() || '127.0.0.1',
    keys,
    syncMs: readInt(env, 'CATCOMFORT_PACK_SYNC_MS', 10_000, 100, 3_600_000),
    keepPreviousMs: readInt(env, 'CATCOMFORT_PREVIOUS_VERSION_KEEP_MINUTES', 60, 0, 10_080) * 60_000,
  };
}

/** Where the CLI finds the admin listener: CATCOMFORT_ADMIN_URL, else 127.0.0.1 on CATCOMFORT_ADMIN_PORT; and its key, CATCOMFORT_ADMIN_KEY. */
export function adminClientFrom(env: Env = process.env): { url: string | null; key: string | null } {
  const port = env.CATCOMFORT_ADMIN_PORT?.trim();
  return {
    url: env.CATCOMFORT_ADMIN_URL?.trim() || (port ? `http://127.0.0.1:${port}` : null),
    key: env.CATCOMFORT_ADMIN_KEY?.trim() || null,
  };
}

/** The repository (or bundle app folder) this code runs from: dist/src/.. /.. */
const appRoot = path.resolve(__dirname, '../..');

/** Where the model packs are: CATCOMFORT_MODELS_DIR, else models/ of this checkout. */
export function modelsDirFrom(env: Env = process.env): string {
  return path.resolve(env.CATCOMFORT_MODELS_DIR ?? path.join(appRoot, 'models'));
}

/** The folder holding copies of the model files to install from (CATCOMFORT_MODEL_MIRROR); undefined: their URLs. */
export function modelMirrorFrom(env: Env = process.env): string | undefined {
  return env.CATCOMFORT_MODEL_MIRROR?.trim() || undefined;
}

/** The shared fixtures folder of the tools (CATCOMFORT_SHARED_DIR, else ../shared beside the checkout). */
export function sharedDirFrom(env: Env = process.env): string {
  return path.resolve(appRoot, env.CATCOMFORT_SHARED_DIR ?? '../shared');
}

/** The scan store: PostgreSQL at CATCOMFORT_DATABASE_URL when set, else SQLite in CATCOMFORT_DATA_DIR (default data/). */
export function storeLocationFrom(env: Env = process.env): { dataDir: string; databaseUrl: string | null } {
  return { dataDir: path.resolve(env.CATCOMFORT_DATA_DIR?.trim() || path.join(appRoot, 'data')), databaseUrl: env.CATCOMFORT_DATABASE_URL?.trim() || null };
}

/** UNSAFE switch: scan image and callback URLs may reach private and loopback addresses (CATCOMFORT_FETCH_ALLOW_PRIVATE). */
export function allowPrivateUrlsFrom(env: Env = process.env): boolean {
  return readBool(env, 'CATCOMFORT_FETCH_ALLOW_PRIVATE', false);
}

/** Where the service listens: CATCOMFORT_HOST (default all interfaces) and CATCOMFORT_PORT (default 8080). */
export function listenAddressFrom(env: Env = process.env): { host: string; port: number } {
  return { host: env.CATCOMFORT_HOST?.trim() || '0.0.0.0', port: readInt(env, 'CATCOMFORT_PORT', 8080, 0, 65535) };
}

/** CATCOMFORT_FFMPEG, else the npm package's ffmpeg; throws naming `purpose` when there is none (tools, benchmarks, tests). */
export function ffmpegFor(purpose: string, env: Env = process.env): string {
  const found = env.CATCOMFORT_FFMPEG ?? defaultFfmpegPath();
  if (found === null) throw new Error(`${purpose} needs ffmpeg: set CATCOMFORT_FFMPEG (its npm package is not installed)`);
  return found;
}

/** The ffmpeg shipped in an npm package (used unless CATCOMFORT_FFMPEG names another); null when that package is not installed. */
export function defaultFfmpegPath(): string | null {
  try {
    return path.join(path.dirname(createRequire(__filename).resolve('@ffmpeg-installer/linux-x64/package.json')), 'ffmpeg');
  } catch {
    return null;
  }
}

export function loadConfig(env: Env = process.env): Config {
  const cores = Math.max(1, os.availableParallelism());
  const logLevel = (env.CATCOMFORT_LOG_LEVEL ?? 'info').toLowerCase();
  if (!['debug', 'info', 'warn', 'error'].includes(logLevel)) {
    throw new ConfigError(`CATCOMFORT_LOG_LEVEL must be debug, info, warn or error, got "${logLevel}"`);
  }
  const listen = listenAddressFrom(env);
  return {
    ...listen,
    apiKeys: readKeys(env),
    modelsDir: modelsDirFrom(env),
    defaultModel: env.CATCOMFORT_DEFAULT_MODEL ?? 'bc-v1',
    providers: readProviders(env),
    deviceId: readInt(env, 'CATCOMFORT_CUDA_DEVICE_ID', 0, 0, 64),
    trtCacheDir: path.resolve(env.CATCOMFORT_TRT_CACHE_DIR ?? path.join(os.tmpdir(), 'catcomfort-trt-cache')),
    trtFp16: readBool(env, 'CATCOMFORT_TRT_FP16', false),
    cudnnConvAlgoSearch: readCudnnConvAlgoSearch(env),
    pinnedMemory: readBool(env, 'CATCOMFORT_PINNED_MEMORY', true),
    precision: readPrecision(env),
    providerProbeTimeoutMs: readInt(env, 'CATCOMFORT_PROVIDER_PROBE_TIMEOUT_MS', 300_000, 1000, 3_600_000),
    // Pool threads x intra-op threads should not exceed the cores: decode parallelism
    // comes from the pool, model parallelism from ORT.
    poolThreads: readInt(env, 'CATCOMFORT_POOL_THREADS', cores, 1, 256),
    intraOpThreads: readInt(env, 'CATCOMFORT_INTRA_OP_THREADS', 1, 1, 256),
    sessionBatch: env.CATCOMFORT_SESSION_BATCH ? readInt(env, 'CATCOMFORT_SESSION_BATCH', 1, 1, 1024) : null,
    maxBodyBytes: readInt(env, 'CATCOMFORT_MAX_BODY_BYTES', 8 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    maxPixels: readInt(env, 'CATCOMFORT_MAX_PIXELS', 40_000_000, 1, 1_000_000_000),
    front: {
      upstreamConnections: readInt(env, 'CATCOMFORT_UPSTREAM_CONNECTIONS', POOL_DEFAULTS.connections, 1, 4096),
      upstreamQueue: readInt(env, 'CATCOMFORT_UPSTREAM_QUEUE', POOL_DEFAULTS.queue, 0, 1_000_000),
      trustedProxies: readTrustedProxies(env),
    },
    batching: {
      maxBatchSize: readInt(env, 'CATCOMFORT_BATCH_MAX_SIZE', 4, 1, 64),
      maxQueueDelayUs: readInt(env, 'CATCOMFORT_BATCH_MAX_DELAY_US', 500, 0, 10_000_000),
      maxQueue: readInt(env, 'CATCOMFORT_QUEUE_MAX', 64, 1, 100_000),
      maxInFlight: readInt(env, 'CATCOMFORT_BATCH_IN_FLIGHT', 2, 1, 64),
    },
    requestTimeoutMs: readInt(env, 'CATCOMFORT_REQUEST_TIMEOUT_MS', 10_000, 1, 3_600_000),
    video: {
      ffmpegPath: env.CATCOMFORT_FFMPEG ?? defaultFfmpegPath(),
      concurrency: readInt(env, 'CATCOMFORT_VIDEO_CONCURRENCY', 2, 1, 256),
      maxSeconds: readInt(env, 'CATCOMFORT_VIDEO_MAX_SECONDS', 300, 1, 86_400),
      maxFrames: readInt(env, 'CATCOMFORT_VIDEO_MAX_FRAMES', 60, 1, 1000),
      wallTimeMs: readInt(env, 'CATCOMFORT_VIDEO_TIMEOUT_MS', 20_000, 100, 600_000),
      memoryBytes: readInt(env, 'CATCOMFORT_VIDEO_MEMORY_MB', 1024, 64, 65_536) * 1024 * 1024,
    },
    legacy: {
      deprecatedSince: readDate(env, 'CATCOMFORT_LEGACY_DEPRECATED_SINCE', '2023-11-22T00:00:00Z')!,
      sunset: readDate(env, 'CATCOMFORT_LEGACY_SUNSET', null),
    },
    buildNumber: env.CATCOMFORT_BUILD_NUMBER ?? 'local',
    scan: {
      ...storeLocationFrom(env),
      model: env.CATCOMFORT_SCAN_MODEL ?? 'bc-v1',
      workers: readInt(env, 'CATCOMFORT_SCAN_WORKERS', 2, 0, 64),
      leaseMs: readInt(env, 'CATCOMFORT_SCAN_LEASE_MS', 30_000, 100, 3_600_000),
      maxAttempts: readInt(env, 'CATCOMFORT_SCAN_MAX_ATTEMPTS', 3, 1, 100),
      retentionMs: readInt(env, 'CATCOMFORT_SCAN_RETENTION_HOURS', 720, 1, 87_600) * 3_600_000,
      authFailuresPerMinute: readInt(env, 'CATCOMFORT_SCAN_AUTH_FAILURES_PER_MINUTE', 20, 1, 1_000_000),
      allowPrivateUrls: allowPrivateUrlsFrom(env),
      webhooks: {
        concurrency: readInt(env, 'CATCOMFORT_WEBHOOK_CONCURRENCY', 64, 0, 1024),
        perReceiver: readInt(env, 'CATCOMFORT_WEBHOOK_PER_RECEIVER', 4, 1, 1024),
        timeoutMs: readInt(env, 'CATCOMFORT_WEBHOOK_TIMEOUT_MS', 10_000, 100, 60_000),
        retrySchedule: readRetrySchedule(env),
      },
    },
    logLevel: logLevel as Config['logLevel'],
    metrics: readMetrics(env),
    admin: readAdmin(env, listen.port),
  };
}

function readRetrySchedule(env: Env): number[] {
  const raw = env.CATCOMFORT_WEBHOOK_RETRY_SCHEDULE;
  try {
    return parseRetrySchedule(raw === undefined || raw.trim() === '' ? DEFAULT_RETRY_SCHEDULE : raw);
  } catch (error) {
    throw new ConfigError(`CATCOMFORT_WEBHOOK_RETRY_SCHEDULE: ${(error as Error).message}`);
  }
}

function readMetrics(env: Env): MetricsConfig {
  const access = (env.CATCOMFORT_METRICS ?? 'key').trim().toLowerCase();
  if (access !== 'key' && access !== 'open' && access !== 'off') {
    throw new ConfigError(`CATCOMFORT_METRICS must be key, open or off, got "${env.CATCOMFORT_METRICS}"`);
  }
  const port = env.CATCOMFORT_METRICS_PORT?.trim() ? readInt(env, 'CATCOMFORT_METRICS_PORT', 0, 0, 65535) : null;
  return { access, port };
}
