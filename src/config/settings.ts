// Every CATCOMFORT_* variable in one table, written once: its name, kind (parse.ts, kinds.ts),
// default and docs line, nested as the service's Config reads it. Config's type and loadConfig
// (index.ts) come from this table (shape.ts), so a new setting is one row here; settings only
// tools, the CLI or tests read are marked toolOnly. The unknown-variable check (unknown.ts) knows
// its names, and docs/configuration.md's table is written from it in this order (`npm run
// docs:settings`; its links are relative to docs/, checked by test/config.test.ts).
import os from 'node:os';
import { addresses, ffmpeg, keys, providers, retrySchedule } from './kinds';
import { bool, choice, date, folder, int, optionalChoice, optionalDate, optionalInt, optionalText, text, tmpFolder } from './parse';
import { converted, settingsOf, toolOnly } from './shape';

export type { ProviderName } from './kinds';

/** The largest request body by default (8 MiB); the OpenAPI documents take it from here. */
export const MAX_BODY_BYTES = 8 * 1024 * 1024;

/** The front's threads by default: the main thread below 8 cores, else one thread per 4 cores (at most 8). */
export function defaultHttpThreads(cores: number): number {
  return cores < 8 ? 1 : Math.min(8, Math.floor(cores / 4));
}

export const SETTINGS = {
  host: text('CATCOMFORT_HOST', '0.0.0.0', 'Listen address'),
  port: int('CATCOMFORT_PORT', 8080, 0, 65535, 'Listen port (`0` = any free port; the `listening` log line names it). It opens before the packs load; see [Health, metrics and logs](operations.md#health-metrics-and-logs)'),
  apiKeys: keys('CATCOMFORT_API_KEYS', 'Comma-separated API keys (16-256 printable ASCII characters each). Unset: one random key is generated at start and printed once; there is never a fixed default key'),
  modelsDir: folder('CATCOMFORT_MODELS_DIR', 'models', 'Folder of model packs (each sub-folder with a `manifest.json`)'),
  defaultModel: text('CATCOMFORT_DEFAULT_MODEL', 'bc-v1', 'Model of `/v2/predict`'),
  modelMirror: toolOnly(optionalText('CATCOMFORT_MODEL_MIRROR', "Install-time only: folder holding `yolox-nano/yolox_nano.onnx` (bc-legacy's detector); unset = download from the release URL")),
  providers: providers('CATCOMFORT_EXECUTION_PROVIDERS', 'Ordered ONNX Runtime providers, e.g. `tensorrt,cuda,cpu`. CPU is always appended. Each accelerated provider is first proven in a child process (see [GPU execution providers](gpu.md#gpu-execution-providers)); one that fails its probe is disabled, one whose libraries are missing is skipped, each with one log line'),
  providerProbeTimeoutMs: int('CATCOMFORT_PROVIDER_PROBE_TIMEOUT_MS', 300_000, 1000, 3_600_000, "Longest a provider's probe may take (building every loaded pack's sessions on it and running each at every batch size); past it the provider is disabled. Allow for TensorRT engine builds on a cold `CATCOMFORT_TRT_CACHE_DIR`"),
  cudnnConvAlgoSearch: choice('CATCOMFORT_CUDNN_CONV_ALGO_SEARCH', ['EXHAUSTIVE', 'HEURISTIC', 'DEFAULT'] as const, 'HEURISTIC', "CUDA provider option `cudnn_conv_algo_search`: `EXHAUSTIVE` (benchmarks every algorithm: seconds per convolution shape at the first Run), `HEURISTIC` (cuDNN's heuristics), `DEFAULT`: **not** one fixed algorithm but, since ONNX Runtime 1.20, its slow fallback mode (measured on an H200: every request about 500 ms; onnxruntime issue 22705). Keep `HEURISTIC`", 'upper'),
  deviceId: int('CATCOMFORT_CUDA_DEVICE_ID', 0, 0, 64, 'GPU for CUDA/TensorRT'),
  trtCacheDir: tmpFolder('CATCOMFORT_TRT_CACHE_DIR', 'catcomfort-trt-cache', 'TensorRT engine cache folder'),
  trtFp16: bool('CATCOMFORT_TRT_FP16', false, 'TensorRT fp16'),
  precision: optionalChoice('CATCOMFORT_PRECISION', ['int8', 'fp32'] as const, 'Precision of the detector and the ImageNet backbone: `int8` or `fp32`. Auto: `int8` on CPU where a pack ships an int8 form (bc-v1 does) **and its int8 self-check passes on this CPU** ([int8 on every CPU](packs.md#int8-on-every-cpu-bc-v1) under "Model packs"), else `fp32`; `fp32` on GPU providers. `int8` forces int8 even when the self-check fails (with a warning). `GET /v2/models` (`detector.precision`, `detector.precision_reason`) and `/v2/stats` say which serves and why', 'auto'),
  pinnedMemory: bool('CATCOMFORT_PINNED_MEMORY', true, "Stage session inputs and outputs in the GPU provider's pinned host memory when it offers it ([GPU execution providers](gpu.md#gpu-execution-providers)); `false`: plain memory"),
  poolThreads: int('CATCOMFORT_POOL_THREADS', () => Math.max(1, os.availableParallelism()), 1, 256, "Threads of the addon's pool (decode, preprocessing, session runs)", 'number of cores'),
  cpuArena: bool('CATCOMFORT_CPU_ARENA', false, "ONNX Runtime's CPU memory arena for session tensors. `false`: each Run's tensors come from the process's allocator and go back to it; `true`: ONNX Runtime keeps them in its own arena, which holds every block it ever took (33-45 MiB more RSS under the soak's mixed load) and saves 0-2 ms a request at one client ([Memory](operations.md#memory))"),
  intraOpThreads: int('CATCOMFORT_INTRA_OP_THREADS', 1, 1, 256, 'ONNX Runtime intra-op threads per run. Keep pool x intra-op <= cores'),
  lowLoadThreads: int(
    'CATCOMFORT_LOW_LOAD_THREADS',
    1,
    1,
    256,
    'CPU only: above `1`, each stage gets a second batch-1 session with this many ONNX Runtime intra-op threads; a lone image takes it while at most `CATCOMFORT_LOW_LOAD_IN_FLIGHT` analyses run, so one request spreads over idle cores. Off by default: on the 2-core machine measured it did not pay ([Low load](performance.md#low-load-one-request-over-several-cores-off-by-default))',
  ),
  lowLoadInFlight: int('CATCOMFORT_LOW_LOAD_IN_FLIGHT', 1, 1, 256, 'Analyses (micro-batches, of every pack) running at most, this one included, for a lone image to take the low-load sessions'),
  sessionBatch: optionalInt('CATCOMFORT_SESSION_BATCH', 1, 1024, "Largest number of images per ONNX Runtime Run. Auto: 1 on CPU (a batched Run costs the same per image there, so a request's views run in parallel on the pool), a whole request batch with all its views on a GPU (`CATCOMFORT_BATCH_MAX_SIZE` x views). Runs are padded up to fixed sizes: the powers of two below it, then it (8: 1, 2, 4, 8), **each size its own ONNX Runtime session**, which sees that one input shape for its whole life; at warm-up each size is timed and only the sizes that pay stay ([GPU execution providers](gpu.md#gpu-execution-providers))", 'auto'),
  maxBodyBytes: int('CATCOMFORT_MAX_BODY_BYTES', MAX_BODY_BYTES, 1024, 512 * 1024 * 1024, 'Largest request body, at most 512 MiB; over it: 413 (`http_error`)'),
  benchFreeModel: bool('CATCOMFORT_BENCH_FREE_MODEL', false, "**Benchmarks only.** The packs' networks are made free: after warm-up every analysis answers the warm-up photo's result at once, without decoding or running a session, so a load measures the HTTP front, the event loop and the batcher alone ([The direct way](performance-log.md#the-direct-way-and-a-main-thread-that-sleeps-when-idle)). Never in production: every answer is the same"),
  benchSimulate: optionalText('CATCOMFORT_BENCH_SIMULATE', "**Benchmarks and tests only.** A device profile: `echo`, `h200` or `cpu-like` (`bench/devices/NAME.json`), or the path of such a file. Session Runs are not run: each waits the profile's host and device time on a simulated device and answers the warm-up photo's outputs, so every answer holds the warm-up photo's detections and scores; decoding and everything else stay real, and the service plans as with a GPU provider. Needs the bench binding `build/Release/catcomfort_bench.node`; the service's binding cannot simulate ([A simulated device](gpu.md#a-simulated-device))"),
  benchSimulateDecode: bool('CATCOMFORT_BENCH_SIMULATE_DECODE', false, "**Benchmarks only**, with `CATCOMFORT_BENCH_SIMULATE`: decoding and detector preprocessing are not done either; each image waits the profile's `decodeHostMs` on a pool thread (as one core of the machine played would spend it) and is the warm-up photo"),
  benchCores: optionalInt('CATCOMFORT_BENCH_CORES', 1, 1024, "**Benchmarks only.** The core count the batching rule reads instead of this machine's, so that with `CATCOMFORT_BENCH_SIMULATE` and `CATCOMFORT_POOL_THREADS` a small machine plays a large one", "this machine's"),
  maxPixels: int('CATCOMFORT_MAX_PIXELS', 40_000_000, 1, 1_000_000_000, 'Largest image (width x height), checked from the header before decoding'),
  front: {
    upstreamConnections: int('CATCOMFORT_UPSTREAM_CONNECTIONS', 256, 1, 4096, 'Requests the HTTP front hands to the service at once, shared by all clients (and among the front\'s threads); a request holds a place from its head to the end of its answer (see [HTTP front](operations.md#http-front)). The name is kept from when each place was a connection'),
    upstreamQueue: int('CATCOMFORT_UPSTREAM_QUEUE', 1024, 0, 1_000_000, 'Requests waiting for such a place; past it, or after `CATCOMFORT_REQUEST_TIMEOUT_MS` of waiting, the front answers 429 with `Retry-After: 1`'),
    trustedProxies: addresses('CATCOMFORT_TRUSTED_PROXIES', 'Comma-separated addresses and CIDRs (`127.0.0.1,10.0.0.0/8,fd00::/8`) of reverse proxies whose `Forwarded` / `X-Forwarded-For` name the client (see [Behind a reverse proxy](operations.md#behind-a-reverse-proxy))'),
    httpThreads: int('CATCOMFORT_HTTP_THREADS', () => defaultHttpThreads(os.availableParallelism()), 1, 64, 'Threads of the HTTP front (see [HTTP front](operations.md#http-front)). `1`: the front runs on the main thread; `2` or more: on that many worker threads, each accepting on the public port and handing every request to the main thread with its share of `CATCOMFORT_UPSTREAM_CONNECTIONS` and `CATCOMFORT_UPSTREAM_QUEUE`, so the main thread keeps only the interfaces and batching', '`1` below 8 cores, else one per 4 cores (at most 8)'),
    idleTimeoutMs: int('CATCOMFORT_CLIENT_IDLE_TIMEOUT_MS', 10_000, 100, 3_600_000, 'Idle limit of a client connection to the HTTP front: between requests, and while a head or a chunked body arrives; past it the connection closes. Before its first byte a new connection may wait 60 s, or this if longer (see [HTTP front](operations.md#http-front) and [Bursts](operations.md#bursts-429-never-503))'),
  },
  stream: {
    maxConnections: int('CATCOMFORT_STREAM_MAX_CONNECTIONS', 64, 0, 100_000, 'Live streams (`/v2/stream`, WebSockets) open at once; past it an upgrade gets 503 with `Retry-After`. `0`: no streams ([Live stream](api-v2.md#live-stream))'),
    idleTimeoutS: int('CATCOMFORT_STREAM_IDLE_TIMEOUT_S', 60, 8, 960, 'A live stream that neither sends nor is sent anything for this long is closed (the WebSocket server counts in steps of about 4 s, up to 960)'),
    maxBufferedBytes: int('CATCOMFORT_STREAM_MAX_BUFFERED_BYTES', 1024 * 1024, 16 * 1024, 64 * 1024 * 1024, "Answers a live stream's client has not read yet, in bytes; past it the stream is closed with code 4008 (a slow reader)"),
  },
  loopNice: int('CATCOMFORT_LOOP_NICE', 0, 0, 19, "Steps of nice (Linux, per thread) that the event loop's thread and the HTTP front's threads run below the analyses, so a CPU short of time runs the admitted images first. Nice is host-wide: the loop then also yields to every other program on the machine, so set it only where the service has the machine to itself (see [CPU priority](operations.md#cpu-priority))"),
  allocator: choice('CATCOMFORT_ALLOCATOR', ['auto', 'jemalloc', 'glibc'] as const, 'auto', "The malloc `bin/catcomfort-service` starts the service with: `auto` (jemalloc where `libjemalloc.so.2` is installed, e.g. Debian's `libjemalloc2`, else glibc's), `jemalloc` (start-up fails without it), `glibc`. jemalloc gives freed pages back by itself, so RSS holds a level over hours; the `ready` line's `malloc.allocator` names the one in force (see [Memory](operations.md#memory))", 'lower'),
  mallocTrimIntervalMs: int('CATCOMFORT_MALLOC_TRIM_INTERVAL_MS', 0, 0, 3_600_000, "How often the addon gives malloc's free pages back to the system (glibc's `malloc_trim` or jemalloc's purge, on one pool thread, at a moment when no analysis is running) and unmaps the image blocks no request needed since the last time; `0` = never. Trims lower RSS by 20-30 MiB on average but make it swing about 10 % from minute to minute (see [Memory](operations.md#memory))"),
  batching: {
    maxBatchSize: optionalInt('CATCOMFORT_BATCH_MAX_SIZE', 1, 64, 'Micro-batch size limit (per-model override: manifest `batching.maxBatchSize`). Auto: `4` on CPU; with a GPU provider `16`, then at warm-up the largest session size that paid (at least `4`; see [How batching is chosen](gpu.md#how-batching-is-chosen))', 'auto'),
    maxQueueDelayUs: int('CATCOMFORT_BATCH_MAX_DELAY_US', 500, 0, 10_000_000, 'Longest wait of the oldest queued request before its batch closes (override: `batching.maxQueueDelayUs`)'),
    maxQueue: optionalInt('CATCOMFORT_QUEUE_MAX', 1, 100_000, 'Queued requests per model; past it: 429 with `Retry-After` (override: `batching.maxQueue`). Auto: `64` on CPU; with a GPU provider 4 x batch size x batches in flight (at least `64`)', 'auto'),
    maxInFlight: optionalInt('CATCOMFORT_BATCH_IN_FLIGHT', 1, 64, 'Batches running at once per model. Auto: `2` on CPU; with a GPU provider one per 4 cores (2 to 8)', 'auto'),
  },
  drainDelayMs: int('CATCOMFORT_DRAIN_DELAY_MS', 5_000, 0, 600_000, "On SIGTERM: how long `/readyz` answers 503 while every request is still served, so a load balancer (Kubernetes endpoints) stops sending new ones first; then the port closes and requests in progress finish. SIGINT (Ctrl-C) skips it (see [Drain](fleet.md#drain))"),
  requestTimeoutMs: int('CATCOMFORT_REQUEST_TIMEOUT_MS', 10_000, 1, 3_600_000, 'Per-request deadline; a request that cannot meet it gets 429'),
  logLevel: choice('CATCOMFORT_LOG_LEVEL', ['debug', 'info', 'warn', 'error'] as const, 'info', '`debug`, `info`, `warn`, `error` (JSON lines)'),
  metrics: {
    access: choice('CATCOMFORT_METRICS', ['key', 'open', 'off'] as const, 'key', '`GET /metrics` on the service port: `key` (needs the `api-key` header), `open` (no key), `off` (not served)'),
    port: optionalInt('CATCOMFORT_METRICS_PORT', 0, 65535, 'A second listener on `CATCOMFORT_HOST` serving only `GET /metrics`, without a key (`0` = any free port; the `listening` line names it as `metrics_port`). For a scrape port that is not published to clients'),
  },
  grpcPort: optionalInt('CATCOMFORT_GRPC_PORT', 0, 65535, "The Open Inference Protocol's gRPC service (`inference.GRPCInferenceService`) on `CATCOMFORT_HOST` at this port (`0` = any free port; the `grpc listening` line names it); unset: no gRPC. Same keys, limits and deadlines as HTTP (see [Open Inference Protocol](oip.md#open-inference-protocol-rest-and-grpc))"),
  buildNumber: text('CATCOMFORT_BUILD_NUMBER', 'local', 'v1 `inference_metadata.build_number`'),
  legacy: {
    deprecatedSince: date('CATCOMFORT_LEGACY_DEPRECATED_SINCE', '2023-11-22T00:00:00Z', 'Date in the `Deprecation` header of bc-legacy responses'),
    sunset: optionalDate('CATCOMFORT_LEGACY_SUNSET', 'Adds a `Sunset` header to bc-legacy responses'),
  },
  video: {
    ffmpegPath: ffmpeg('CATCOMFORT_FFMPEG', 'ffmpeg binary for bc-legacy video (default: the one in `@ffmpeg-installer/linux-x64`). Looked up only when a video arrives: without one the service starts as usual and a video request gets the v1 failure answer `Error: video needs ffmpeg, which is not installed here (set CATCOMFORT_FFMPEG to an ffmpeg binary).`'),
    maxSeconds: int('CATCOMFORT_VIDEO_MAX_SECONDS', 300, 1, 86_400, 'Video limit: clip length, seconds'),
    maxFrames: int('CATCOMFORT_VIDEO_MAX_FRAMES', 60, 1, 1000, 'Video limit: frames analysed'),
    wallTimeMs: int('CATCOMFORT_VIDEO_TIMEOUT_MS', 20_000, 100, 600_000, 'Video limit: ffmpeg wall time (also its CPU-time limit)'),
    memoryBytes: converted(int('CATCOMFORT_VIDEO_MEMORY_MB', 1024, 64, 65_536, 'Video limit: ffmpeg address space, MiB'), (mib) => mib * 1024 * 1024),
    concurrency: int('CATCOMFORT_VIDEO_CONCURRENCY', 2, 1, 256, 'ffmpeg processes at once; further video requests get 429 `{detail}` with `Retry-After`'),
  },
  scan: {
    dataDir: folder('CATCOMFORT_DATA_DIR', 'data', 'Folder of the SQLite scan database'),
    databaseUrl: optionalText('CATCOMFORT_DATABASE_URL', 'PostgreSQL URL; when set, scans live there and instances share them'),
    databasePool: int('CATCOMFORT_DATABASE_POOL', 10, 1, 1000, "PostgreSQL connections per instance, at most. Keep replicas x this + the CLI's and the autoscaler's below the server's `max_connections` (see [The database budget](fleet.md#the-database-budget))"),
    model: text('CATCOMFORT_SCAN_MODEL', 'bc-v1', 'Model that processes scans'),
    workers: optionalInt('CATCOMFORT_SCAN_WORKERS', 0, 1024, 'Scan workers per instance (`0`: this instance only accepts scans). Auto: as many as images the scan model\'s pipeline holds (batch size x batches in flight), so a backlog drains through full batches', 'auto'),
    leaseMs: int('CATCOMFORT_SCAN_LEASE_MS', 30_000, 100, 3_600_000, 'Lease of a claimed scan; after it, another worker may take it'),
    maxAttempts: int('CATCOMFORT_SCAN_MAX_ATTEMPTS', 3, 1, 100, 'Expired attempts before a scan FAILS with `processing_failed`'),
    retentionMs: converted(int('CATCOMFORT_SCAN_RETENTION_HOURS', 720, 1, 87_600, 'Finished scans are purged after this'), (hours) => hours * 3_600_000),
    authFailuresPerMinute: int('CATCOMFORT_SCAN_AUTH_FAILURES_PER_MINUTE', 20, 1, 1_000_000, 'Failed scan credential checks per client address, refilled over a minute; past them, checks that would run scrypt get 429 `too_many_failed_attempts` (pairs verified within the last 30 s keep working; see [Scan interface](scan.md#scan-interface-scan))'),
    allowPrivateUrls: bool('CATCOMFORT_FETCH_ALLOW_PRIVATE', false, '**Unsafe.** Lets scan image and callback URLs reach private/loopback addresses, and callback URLs use http (tests, local development only)'),
    webhooks: {
      concurrency: int('CATCOMFORT_WEBHOOK_CONCURRENCY', 64, 0, 1024, 'Webhook attempts in flight per instance (`0`: this instance sends none)'),
      perReceiver: int('CATCOMFORT_WEBHOOK_PER_RECEIVER', 4, 1, 1024, 'Webhook attempts in flight to one callback URL per instance'),
      timeoutMs: int('CATCOMFORT_WEBHOOK_TIMEOUT_MS', 10_000, 100, 60_000, 'Limit of one webhook attempt, connect to the end of the answer'),
      retrySchedule: retrySchedule('CATCOMFORT_WEBHOOK_RETRY_SCHEDULE', 'Waits after failed attempts 1, 2, ... (`ms`, `s`, `m`, `h`); one attempt more than steps, then the delivery fails'),
    },
  },
  admin: {
    port: optionalInt('CATCOMFORT_ADMIN_PORT', 0, 65535, "The admin listener's port (`0` = any free port; the `admin listening` line names it); unset: no admin listener. Never the public port"),
    host: text('CATCOMFORT_ADMIN_HOST', '127.0.0.1', 'Where the admin listener binds'),
    keys: keys('CATCOMFORT_ADMIN_KEYS', 'Comma-separated admin keys (`Authorization: Bearer`), beside those of `catcomfort keys create --admin`; none configured: one is generated and printed once. An API key is refused there, an admin key on the API'),
    syncMs: int('CATCOMFORT_PACK_SYNC_MS', 10_000, 100, 3_600_000, 'How often an instance converges to the pack versions recorded in the store (see [Rolling out a pack](packs.md#rolling-out-a-pack))'),
    keepPreviousMs: converted(int('CATCOMFORT_PREVIOUS_VERSION_KEEP_MINUTES', 60, 0, 10_080, 'How long the previous version stays loaded after a promotion or rollback (`0`: until unloaded)'), (minutes) => minutes * 60_000),
  },
  adminUrl: toolOnly(optionalText('CATCOMFORT_ADMIN_URL', 'Where `catcomfort packs` finds the admin listener', '`http://127.0.0.1:$CATCOMFORT_ADMIN_PORT`')),
  adminKey: toolOnly(optionalText('CATCOMFORT_ADMIN_KEY', 'The admin key `catcomfort packs` sends')),
  testDatabaseUrl: toolOnly(optionalText('CATCOMFORT_TEST_DATABASE_URL', 'Tests only: a PostgreSQL server for the PostgreSQL tests (each test database is created on it) instead of a throwaway cluster')),
  testPgBin: toolOnly(optionalText('CATCOMFORT_TEST_PG_BIN', 'Tests only: folder of the PostgreSQL server binaries (`initdb`, `pg_ctl`) for the throwaway cluster')),
  sharedDir: toolOnly(folder('CATCOMFORT_SHARED_DIR', '../shared', 'Tools, benchmarks and tests: the shared fixtures folder (photos, models), relative to the checkout')),
} as const;

/** Every CATCOMFORT_* variable the service, its tools and its tests read. */
export const KNOWN_VARIABLES: readonly string[] = settingsOf(SETTINGS).map((s) => s.name);
