// The service's configuration: its Config, read from the settings table (settings.ts) and
// nowhere else (its type too: shape.ts), with the checks between settings, and the small readers
// the CLI, the installer, the tools and the health check use (modelsDirFrom, modelMirrorFrom,
// sharedDirFrom, storeLocationFrom, listenAddressFrom, ...). Invalid values stop start-up with a
// message naming the variable.
import { ConfigError, type Env } from './parse';
import { SETTINGS } from './settings';
import { readValues, type Values } from './shape';

export { ConfigError } from './parse';
export { KNOWN_VARIABLES, type ProviderName } from './settings';

/** The service's settings: the settings table's values (tool-only settings aside), nested as the table is. */
export interface Config extends Values<typeof SETTINGS> {}

/** The batching settings as configured: null where left to the service (src/packs/batching-plan.ts). */
export type BatchingSettings = Config['batching'];
export type FrontConfig = Config['front'];
export type StreamConfig = Config['stream'];
export type MetricsConfig = Config['metrics'];
export type VideoConfig = Config['video'];
export type ScanConfig = Config['scan'];
export type WebhookConfig = ScanConfig['webhooks'];
export type AdminConfig = Config['admin'];

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
  | 'cpuArena'
  | 'lowLoadThreads'
  | 'lowLoadInFlight'
  | 'sessionBatch'
  | 'modelsDir'
  | 'maxPixels'
  | 'batching'
  | 'benchFreeModel'
  | 'benchSimulate'
  | 'benchSimulateDecode'
  | 'benchCores'
>;

/** The service's settings from `env` (the table in settings.ts), then the checks between them. */
export function loadConfig(env: Env = process.env): Config {
  const config = readValues(SETTINGS, env);
  const { port, keys } = config.admin;
  if (port !== null && port !== 0 && port === config.port) throw new ConfigError('CATCOMFORT_ADMIN_PORT must differ from CATCOMFORT_PORT: the admin listener never shares the public port');
  if (keys.some((k) => config.apiKeys.includes(k))) throw new ConfigError('CATCOMFORT_ADMIN_KEYS: a key may not also be in CATCOMFORT_API_KEYS');
  return config;
}

/** Where the CLI finds the admin listener: CATCOMFORT_ADMIN_URL, else 127.0.0.1 on CATCOMFORT_ADMIN_PORT; and its key, CATCOMFORT_ADMIN_KEY. */
export function adminClientFrom(env: Env = process.env): { url: string | null; key: string | null } {
  const port = SETTINGS.admin.port.read(env);
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
export function storeLocationFrom(env: Env = process.env): { dataDir: string; databaseUrl: string | null; databasePool: number } {
  return { dataDir: SETTINGS.scan.dataDir.read(env), databaseUrl: SETTINGS.scan.databaseUrl.read(env), databasePool: SETTINGS.scan.databasePool.read(env) };
}

/** UNSAFE switch: scan image and callback URLs may reach private and loopback addresses (CATCOMFORT_FETCH_ALLOW_PRIVATE). */
export function allowPrivateUrlsFrom(env: Env = process.env): boolean {
  return SETTINGS.scan.allowPrivateUrls.read(env);
}

/** Where the service listens: CATCOMFORT_HOST (default all interfaces) and CATCOMFORT_PORT (default 8080). */
export function listenAddressFrom(env: Env = process.env): { host: string; port: number } {
  return { host: SETTINGS.host.read(env), port: SETTINGS.port.read(env) };
}

/** CATCOMFORT_FFMPEG, else the npm package's ffmpeg; throws naming `purpose` when there is none (tools, benchmarks, tests). */
export function ffmpegFor(purpose: string, env: Env = process.env): string {
  const found = SETTINGS.video.ffmpegPath.read(env);
  if (found === null) throw new Error(`${purpose} needs ffmpeg: set CATCOMFORT_FFMPEG (its npm package is not installed)`);
  return found;
}
