// The service's configuration: its Config, read from the settings table (settings.ts) and
// nowhere else, and the small readers the CLI, the installer, the tools and the health check use
// (modelsDirFrom, modelMirrorFrom, sharedDirFrom, storeLocationFrom, listenAddressFrom, ...).
// Invalid values stop start-up with a message naming the variable.
import { createRequire } from 'node:module';
import path from 'node:path';
import type { CudnnConvAlgoSearch } from '../native/addon';
import { ConfigError, type Env, type Setting } from './parse';
import { SETTINGS, type ProviderName } from './settings';

export { ConfigError } from './parse';
export { KNOWN_VARIABLES, type ProviderName } from './settings';

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
  /** Intra-op threads of the low-load sessions (a lone image while few analyses run); 1: none. */
  lowLoadThreads: number;
  /** Analyses running at most for a lone image to take the low-load sessions. */
  lowLoadInFlight: number;
  /** Images per ONNX Runtime Run; null = chosen at start from the active providers. */
  sessionBatch: number | null;
  maxBodyBytes: number;
  maxPixels: number;
  front: FrontConfig;
  batching: BatchingSettings;
  requestTimeoutMs: number;
  video: VideoConfig;
  legacy: { deprecatedSince: Date; sunset: Date | null };
  buildNumber: string;
  scan: ScanConfig;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  metrics: MetricsConfig;
  /** CATCOMFORT_GRPC_PORT; null: no gRPC service. */
  grpcPort: number | null;
  admin: AdminConfig;
}

/** The batching settings as configured: null where left to the service (src/packs/batching-plan.ts). */
export interface BatchingSettings {
  maxBatchSize: number | null;
  maxQueueDelayUs: number;
  maxQueue: number | null;
  maxInFlight: number | null;
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
  | 'lowLoadThreads'
  | 'lowLoadInFlight'
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
  /** Threads of the front: 1 = the main thread, 2 or more = worker threads. */
  httpThreads: number;
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
  /** null: sized with the batching (src/packs/batching-plan.ts). */
  workers: number | null;
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

/** The service's settings from `env` (the table in settings.ts), with the checks between them. */
export function loadConfig(env: Env = process.env): Config {
  const read = <T>(setting: Setting<T>): T => setting.read(env);
  const listen = listenAddressFrom(env);
  const apiKeys = read(SETTINGS.apiKeys);
  return {
    ...listen,
    apiKeys,
    modelsDir: read(SETTINGS.modelsDir),
    defaultModel: read(SETTINGS.defaultModel),
    providers: read(SETTINGS.providers),
    deviceId: read(SETTINGS.deviceId),
    trtCacheDir: read(SETTINGS.trtCacheDir),
    trtFp16: read(SETTINGS.trtFp16),
    cudnnConvAlgoSearch: read(SETTINGS.cudnnConvAlgoSearch),
    pinnedMemory: read(SETTINGS.pinnedMemory),
    precision: read(SETTINGS.precision),
    providerProbeTimeoutMs: read(SETTINGS.providerProbeTimeoutMs),
    // Pool threads x intra-op threads should not exceed the cores: decode parallelism
    // comes from the pool, model parallelism from ORT.
    poolThreads: read(SETTINGS.poolThreads),
    intraOpThreads: read(SETTINGS.intraOpThreads),
    lowLoadThreads: read(SETTINGS.lowLoadThreads),
    lowLoadInFlight: read(SETTINGS.lowLoadInFlight),
    sessionBatch: read(SETTINGS.sessionBatch),
    maxBodyBytes: read(SETTINGS.maxBodyBytes),
    maxPixels: read(SETTINGS.maxPixels),
    front: {
      upstreamConnections: read(SETTINGS.upstreamConnections),
      upstreamQueue: read(SETTINGS.upstreamQueue),
      trustedProxies: read(SETTINGS.trustedProxies),
      httpThreads: read(SETTINGS.httpThreads),
    },
    batching: {
      maxBatchSize: read(SETTINGS.batchMaxSize),
      maxQueueDelayUs: read(SETTINGS.batchMaxDelayUs),
      maxQueue: read(SETTINGS.queueMax),
      maxInFlight: read(SETTINGS.batchInFlight),
    },
    requestTimeoutMs: read(SETTINGS.requestTimeoutMs),
    video: {
      ffmpegPath: read(SETTINGS.ffmpeg) ?? defaultFfmpegPath(),
      concurrency: read(SETTINGS.videoConcurrency),
      maxSeconds: read(SETTINGS.videoMaxSeconds),
      maxFrames: read(SETTINGS.videoMaxFrames),
      wallTimeMs: read(SETTINGS.videoTimeoutMs),
      memoryBytes: read(SETTINGS.videoMemoryMb) * 1024 * 1024,
    },
    legacy: { deprecatedSince: read(SETTINGS.legacyDeprecatedSince), sunset: read(SETTINGS.legacySunset) },
    buildNumber: read(SETTINGS.buildNumber),
    scan: {
      ...storeLocationFrom(env),
      model: read(SETTINGS.scanModel),
      workers: read(SETTINGS.scanWorkers),
      leaseMs: read(SETTINGS.scanLeaseMs),
      maxAttempts: read(SETTINGS.scanMaxAttempts),
      retentionMs: read(SETTINGS.scanRetentionHours) * 3_600_000,
      authFailuresPerMinute: read(SETTINGS.scanAuthFailuresPerMinute),
      allowPrivateUrls: allowPrivateUrlsFrom(env),
      webhooks: {
        concurrency: read(SETTINGS.webhookConcurrency),
        perReceiver: read(SETTINGS.webhookPerReceiver),
        timeoutMs: read(SETTINGS.webhookTimeoutMs),
        retrySchedule: read(SETTINGS.webhookRetrySchedule),
      },
    },
    logLevel: read(SETTINGS.logLevel),
    metrics: { access: read(SETTINGS.metrics), port: read(SETTINGS.metricsPort) },
    grpcPort: read(SETTINGS.grpcPort),
    admin: readAdmin(env, listen.port, apiKeys),
  };
}

function readAdmin(env: Env, publicPort: number, apiKeys: string[]): AdminConfig {
  const port = SETTINGS.adminPort.read(env);
  if (port !== null && port !== 0 && port === publicPort) throw new ConfigError('CATCOMFORT_ADMIN_PORT must differ from CATCOMFORT_PORT: the admin listener never shares the public port');
  const keys = SETTINGS.adminKeys.read(env);
  if (keys.some((k) => apiKeys.includes(k))) throw new ConfigError('CATCOMFORT_ADMIN_KEYS: a key may not also be in CATCOMFORT_API_KEYS');
  return {
    port,
    host: SETTINGS.adminHost.read(env),
    keys,
    syncMs: SETTINGS.packSyncMs.read(env),
    keepPreviousMs: SETTINGS.previousVersionKeepMinutes.read(env) * 60_000,
  };
}

/** Where the CLI finds the admin listener: CATCOMFORT_ADMIN_URL, else 127.0.0.1 on CATCOMFORT_ADMIN_PORT; and its key, CATCOMFORT_ADMIN_KEY. */
export function adminClientFrom(env: Env = process.env): { url: string | null; key: string | null } {
  const port = SETTINGS.adminPort.read(env);
  return { url: SETTINGS.adminUrl.read(env) ?? (port !== null ? `http://127.0.0.1:${port}` : null), key: SETTINGS.adminKey.read(env) };
}

/** Where the model packs are: CATCOMFORT_MODELS_DIR, else models/ of this checkout. */
export function modelsDirFrom(env: Env = process.env): string {
  return SETTINGS.modelsDir.read(env);
}

/** The folder holding copies of the model files to install from (CATCOMFORT_MODEL_MIRROR); undefined: their URLs. */
export function modelMirrorFrom(env: Env = process.env): string | undefined {
  return SETTINGS.modelMirror.read(env) ?? undefined;
}

/** The shared fixtures folder of the tools (CATCOMFORT_SHARED_DIR, else ../shared beside the checkout). */
export function sharedDirFrom(env: Env = process.env): string {
  return SETTINGS.sharedDir.read(env);
}

/** The scan store: PostgreSQL at CATCOMFORT_DATABASE_URL when set, else SQLite in CATCOMFORT_DATA_DIR (default data/). */
export function storeLocationFrom(env: Env = process.env): { dataDir: string; databaseUrl: string | null } {
  return { dataDir: SETTINGS.dataDir.read(env), databaseUrl: SETTINGS.databaseUrl.read(env) };
}

/** UNSAFE switch: scan image and callback URLs may reach private and loopback addresses (CATCOMFORT_FETCH_ALLOW_PRIVATE). */
export function allowPrivateUrlsFrom(env: Env = process.env): boolean {
  return SETTINGS.fetchAllowPrivate.read(env);
}

/** Where the service listens: CATCOMFORT_HOST (default all interfaces) and CATCOMFORT_PORT (default 8080). */
export function listenAddressFrom(env: Env = process.env): { host: string; port: number } {
  return { host: SETTINGS.host.read(env), port: SETTINGS.port.read(env) };
}

/** CATCOMFORT_FFMPEG, else the npm package's ffmpeg; throws naming `purpose` when there is none (tools, benchmarks, tests). */
export function ffmpegFor(purpose: string, env: Env = process.env): string {
  const found = SETTINGS.ffmpeg.read(env) ?? defaultFfmpegPath();
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
