// Prometheus metrics of the service, on a registry of its own (prom-client's global default
// registry stays empty). Names and labels are documented in docs/operations.md "Health, metrics and logs"
// and queried by ops/grafana/catcomfort-dashboard.json.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { lentBytes } from '../memory/lent-bytes';
import { externalCollectionSeconds, externalCollections } from '../memory/external-collections';
import { TallyHistogram } from './tally-histogram';
import { eventLoopBusySeconds, eventLoopFigures, gcSeconds, mainThreadCpuSeconds } from './event-loop';

/** Sampling step of nodejs_eventloop_lag_* (ms). */
const LAG_PRECISION_MS = 100;

/** Where scrape-time gauges read their values; each is set once the service has it. */
export interface MetricSources {
  /** Requests received and not yet answered (nor abandoned by their client). */
  requestsInFlight?(): number;
  /** Requests waiting in each model's micro-batch queue. */
  queueDepths?(): Array<{ model: string; queued: number }>;
  /** The HTTP front's places in the service held (open; idle is always 0) and requests waiting for one (front/places.ts). */
  upstream?(): { open: number; idle: number; waiting: number };
  /** Scans waiting (PENDING) and being worked on (PROCESSING), from the store all instances share. */
  scanQueue?(): Promise<{ pending: number; processing: number }>;
  /** Webhook deliveries not yet ended, from the shared store. */
  webhookQueue?(): Promise<{ due: number; scheduled: number; in_flight: number }>;
  /** The addon's pool of image-sized blocks (src/native/addon.ts ImageBlockCounts). */
  imageBlocks?(): { taken: number; reused: number; idleBytes: number; mappedBytes: number };
  /** The V8 heaps of the HTTP front's threads, summed; null while it runs on the main thread. */
  frontThreadsHeap?(): { total: number; used: number; external: number } | null;
  /** jemalloc's account of its memory, null under another malloc (src/native/addon.ts MallocBytes). */
  mallocBytes?(): Record<'allocated' | 'active' | 'dirty' | 'resident' | 'retained', number> | null;
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const STAGE_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

export class ServiceMetrics {
  readonly registry = new Registry();
  private sources: MetricSources = {};
  private processMetrics = false;

  readonly requests = this.counter('catcomfort_http_requests_total', `HTTP requests, once each (status "client_closed": the client's connection was reset before the answer was written), by interface, route pattern, model and status`, ['interface', 'route', 'model', 'status']);

  readonly grpcCalls = this.counter('catcomfort_grpc_calls_total', 'gRPC calls (Open Inference Protocol), once each, by method, model and the name of the status the client experienced (CANCELLED: it reset the call first, at any stage; DEADLINE_EXCEEDED: its deadline had passed)', ['method', 'model', 'code']);

  readonly grpcCallDuration = this.histogram('catcomfort_grpc_call_duration_seconds', "gRPC call latency, from the call to its status or its client's leaving", ['method'], LATENCY_BUCKETS);

  readonly requestDuration = this.tally('catcomfort_http_request_duration_seconds', 'End-to-end request latency, from the request head to the last byte of the answer handed to the HTTP front', ['interface', 'route'], LATENCY_BUCKETS);

  readonly stageDuration = this.tally('catcomfort_stage_duration_seconds', 'Time by stage (src/timing/stage-times.ts), per image: queue, decode, detect, crop, classify, loop; per HTTP request that analysed an image: read, convert', ['model', 'stage'], STAGE_BUCKETS);

  readonly batchSize = this.histogram('catcomfort_batch_size', 'Images per micro-batch handed to the native pipeline', ['model'], [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]);

  readonly rejections = this.counter('catcomfort_queue_rejections_total', 'Images refused by a model queue: queue_full, or deadline (cannot be served in time). HTTP answers 429; gRPC UNAVAILABLE, or DEADLINE_EXCEEDED for a client deadline sooner than the request timeout; a scan tries again', ['model', 'reason']);

  readonly verifierVetoes = this.counter('catcomfort_verifier_vetoes_total', 'Images whose detected candidates the verifier all vetoed as look-alikes (detection low_confidence)', ['model']);

  readonly scanStoreUp = this.gauge('catcomfort_scan_store_up', '1 while the scan store answers, 0 from a call that found it unreachable or unable to write until one that succeeds', []);

  readonly scanStoreErrors = this.counter('catcomfort_scan_store_errors_total', 'Scan store calls that failed because the store was unavailable, by operation', ['operation']);

  readonly scanOutcomes = this.counter('catcomfort_scan_outcomes_total', 'Scans finished by this instance: completed, or failed with its error code', ['outcome', 'code']);

  readonly webhookDeliveries = this.counter('catcomfort_webhook_deliveries_total', 'Webhook attempts made by this instance, by outcome: delivered (2xx), retry (another attempt scheduled) or failed (given up)', ['outcome']);

  readonly versionAnswers = this.counter('catcomfort_version_answers_total', 'Images answered by each pack version, by its role when it answered (serving or canary)', ['model', 'version', 'role']);

  readonly shadowComparisons = this.counter(
    'catcomfort_shadow_comparisons_total',
    "A shadow version's result against the serving version's on the same image: detection state and comfort label agree or disagree (label none: neither detected a cat)",
    ['model', 'version', 'detection', 'label'],
  );

  readonly shadowScoreDifference = this.histogram('catcomfort_shadow_score_difference', "|shadow score - serving score| where both scored the image", ['model', 'version'], [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 1]);

  readonly shadowLatency = this.histogram('catcomfort_shadow_latency_seconds', "A shadow version's time per image, its queue included", ['model', 'version'], STAGE_BUCKETS);

  readonly shadowSkipped = this.counter('catcomfort_shadow_skipped_total', 'Images a shadow version did not run: busy (serving had work waiting or no free batch slot, or another shadow image was running) or failed', ['model', 'version', 'reason']);

  readonly provider = this.gauge('catcomfort_execution_provider', 'ONNX Runtime execution providers configured: 1 active, 0 not in use', ['provider']);

  readonly streamsOpen = this.gauge('catcomfort_streams_open', 'Live streams (/v2/stream) open now', []);
  readonly streamFrames = this.counter('catcomfort_stream_frames_total', 'Frames of live streams: received, analysed (answered with a result or an error) or skipped (replaced by a newer frame, refused by a full queue, or waiting when the stream closed)', ['outcome']);
  readonly mallocTrims = this.counter('catcomfort_malloc_trims_total', "Times the addon gave malloc's free pages back to the system (CATCOMFORT_MALLOC_TRIM_INTERVAL_MS)", []);
  readonly mallocTrimReleasedBytes = this.counter('catcomfort_malloc_trim_released_bytes_total', 'Resident bytes the process had fewer after each of those trims than before it', []);
  readonly mallocTrimSeconds = this.counter('catcomfort_malloc_trim_seconds_total', 'Time those trims took (each on one thread of the addon\'s pool)', []);
  readonly ready = this.gauge('catcomfort_ready', '1 when every model pack has warmed up and the service takes requests, 0 while starting or draining', []);

  readonly buildInfo = this.gauge('catcomfort_build_info', 'Always 1; the labels name the service release', ['version']);

  private counter<L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L> {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  private histogram<L extends string>(name: string, help: string, labelNames: readonly L[], buckets: number[]): Histogram<L> {
    return new Histogram({ name, help, labelNames, buckets, registers: [this.registry] });
  }

  /** A histogram observed on every request: its series are looked up once (tally-histogram.ts). */
  private tally<L extends string>(name: string, help: string, labelNames: readonly L[], buckets: number[]): TallyHistogram<L> {
    return new TallyHistogram(name, help, labelNames, buckets, this.registry);
  }

  private gauge<L extends string>(name: string, help: string, labelNames: readonly L[]): Gauge<L> {
    return new Gauge({ name, help, labelNames, registers: [this.registry] });
  }

  constructor() {
    const metrics = this;
    new Gauge({
      name: 'catcomfort_http_requests_in_flight',
      help: 'HTTP requests the service has received and not yet answered (not gRPC calls)',
      registers: [this.registry],
      collect() {
        if (metrics.sources.requestsInFlight) this.set(metrics.sources.requestsInFlight());
      },
    });
    new Gauge({
      name: 'catcomfort_queue_depth',
      help: 'Images waiting in a model micro-batch queue, from every interface',
      labelNames: ['model'] as const,
      registers: [this.registry],
      collect() {
        for (const { model, queued } of metrics.sources.queueDepths?.() ?? []) this.set({ model }, queued);
      },
    });
    this.stateGauge(
      'catcomfort_front_upstream',
      "The HTTP front's places in the service: held by requests (open; idle is always 0, kept for dashboards), and requests waiting for one",
      () => metrics.sources.upstream?.(),
    );
    this.readCounter(
      'catcomfort_event_loop_busy_seconds_total',
      "Seconds the main thread's event loop was busy (performance.eventLoopUtilization); its rate is the loop's utilisation",
      eventLoopBusySeconds,
    );
    this.readCounter(
      'catcomfort_main_thread_cpu_seconds_total',
      'User + system CPU seconds of the main thread alone (HTTP, JSON, batching, answers); divided by the requests answered, its cost per request',
      mainThreadCpuSeconds,
    );
    this.readCounter(
      'catcomfort_gc_seconds_total',
      "Seconds the garbage collector held the main thread (its gc performance entries); over catcomfort_main_thread_cpu_seconds_total, the collector's share",
      gcSeconds,
    );
    this.readGauge('catcomfort_gc_share', "The garbage collector's pauses as a share of the main thread's CPU time over the last 10 s window (0..1)", () => eventLoopFigures().gcShare);
    this.readGauge('catcomfort_event_loop_utilization', 'Busy share of the event loop over the last 10 s window (0..1)', () => eventLoopFigures().utilization);
    this.readGauge(
      'catcomfort_main_thread_cpu_us_per_request',
      'Main-thread CPU microseconds per request answered (HTTP and gRPC) over the last 10 s window',
      () => eventLoopFigures().mainThreadUsPerRequest,
    );
    this.readGauge(
      'catcomfort_http_direct_lent_bytes',
      "Request bodies' bytes the HTTP front has lent the service from its slabs and not yet had back (held by a request or an analysis; the name is kept from the direct way)",
      lentBytes,
    );
    this.readCounter(
      'catcomfort_external_collections_total',
      "Full V8 collections the main thread ran itself because its external memory (buffers of what it read) had grown by 4 MiB",
      externalCollections,
    );
    this.readCounter('catcomfort_external_collections_seconds_total', 'Seconds the main thread spent in those collections (its loop waits meanwhile)', externalCollectionSeconds);
    this.readCounter('catcomfort_image_blocks_taken_total', 'Image-sized blocks (decoded photos, resized views, base64-decoded files) the addon took from its pool', () => metrics.sources.imageBlocks?.().taken ?? null);
    this.readCounter('catcomfort_image_blocks_reused_total', 'Of those, blocks another request had used before (the rest were new mappings)', () => metrics.sources.imageBlocks?.().reused ?? null);
    this.stateGauge('catcomfort_image_blocks_bytes', "The addon's pool of image-sized blocks: mapped and in use, and idle (kept for the next request, at most 64 MiB)", () => {
      const counts = metrics.sources.imageBlocks?.();
      return counts && { in_use: counts.mappedBytes - counts.idleBytes, idle: counts.idleBytes };
    });
    this.stateGauge(
      'catcomfort_malloc_bytes',
      "jemalloc's account of its memory (left out under another malloc): allocated (blocks handed out), active (pages holding them), dirty (free pages kept until they decay), resident (with its metadata), retained (address space given back to the system)",
      () => metrics.sources.mallocBytes?.() ?? undefined,
    );
    this.stateGauge(
      'catcomfort_front_threads_heap_bytes',
      "The V8 heaps of the HTTP front's threads (CATCOMFORT_HTTP_THREADS >= 2; left out with one), summed, as each last reported (every 5 s): total (committed), used (live objects), external (memory outside the heap their objects hold)",
      () => metrics.sources.frontThreadsHeap?.() ?? undefined,
    );
    this.storeDepthGauge('catcomfort_scan_queue_depth', 'Scans in the shared store by state: pending (waiting for a worker) and processing', () => metrics.sources.scanQueue?.());
    this.storeDepthGauge(
      'catcomfort_webhook_queue_depth',
      'Webhook deliveries not yet ended, in the shared store: due (waiting for a dispatcher), scheduled (a retry later) and in_flight',
      () => metrics.sources.webhookQueue?.(),
    );
  }

  /** A counter whose value is a running total read at each scrape (left out while `read` has none). */
  private readCounter(name: string, help: string, read: () => number | null): void {
    new Counter({
      name,
      help,
      registers: [this.registry],
      collect() {
        const value = read();
        this.reset();
        if (value !== null) this.inc(value);
      },
    });
  }

  /** A gauge of values by `state`, read at each scrape (left out while `read` has none). */
  private stateGauge(name: string, help: string, read: () => Record<string, number> | undefined): void {
    new Gauge({
      name,
      help,
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        for (const [state, value] of Object.entries(read() ?? {})) this.set({ state }, value);
      },
    });
  }

  /** A gauge read at each scrape (left out while `read` has none). */
  private readGauge(name: string, help: string, read: () => number | null): void {
    new Gauge({
      name,
      help,
      registers: [this.registry],
      collect() {
        const value = read();
        if (value !== null) this.set(value);
      },
    });
  }

  /** A gauge of counts by `state` read from the store at each scrape; a store that cannot answer leaves it out of that scrape rather than failing it. */
  private storeDepthGauge(name: string, help: string, read: () => Promise<Record<string, number>> | undefined): void {
    new Gauge({
      name,
      help,
      labelNames: ['state'] as const,
      registers: [this.registry],
      async collect() {
        const pending = read();
        if (!pending) return;
        const depth = await pending.catch(() => null);
        if (!depth) return this.reset();
        for (const [state, n] of Object.entries(depth)) this.set({ state }, n);
      },
    });
  }

  setSources(sources: MetricSources): void {
    this.sources = { ...this.sources, ...sources };
  }

  /** Node's process metrics (CPU, memory, event loop lag, handles, GC), unprefixed as usual. */
  collectProcessMetrics(): void {
    if (this.processMetrics) return;
    this.processMetrics = true;
    // The lag histogram's timer wakes the event loop once per precision: 100 ms, not the default
    // 10, keeps an idle service's main thread asleep (each wake costs ~100 us of CPU here).
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: LAG_PRECISION_MS });
  }

  /** The text exposition format (version 0.0.4): every metric, or only those `names` (unknown ones left out). */
  async scrape(names: string[] = []): Promise<{ contentType: string; body: string }> {
    if (names.length === 0) return { contentType: this.registry.contentType, body: await this.registry.metrics() };
    const known = names.filter((name) => this.registry.getSingleMetric(name) !== undefined);
    const texts = await Promise.all(known.map((name) => this.registry.getSingleMetricAsString(name)));
    return { contentType: this.registry.contentType, body: texts.map((t) => `${t}\n`).join('') };
  }
}

/** The service's metrics, recorded from wherever the events happen. */
export const metrics = new ServiceMetrics();
