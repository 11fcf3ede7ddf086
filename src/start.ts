// Start-up and shutdown. The port opens first, with only health, readiness and metrics routed:
// /readyz answers 503 with each pack's state while the store opens and the packs load and warm up,
// and every other request gets 503 with Retry-After. Then the interfaces are registered and the
// service turns ready.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from './config';
import { KeyRing } from './keys/key-ring';
import { loadDocsAssets } from './http/docs/pages';
import { Router } from './http/router';
import { HttpServer } from './front/server';
import { log } from './log';
import { startPackControl, versionStates } from './packs/control/start';
import { verdictsFile } from './packs/probe/verdicts';
import { loadModels, warmUpAll } from './packs/runtime';
import { ModelRegistry } from './packs/registry';
import { OPS_PATHS, recordFrontAnswer, recordRequest } from './ops/access-log';
import { sampleEventLoop } from './ops/event-loop';
import { metrics } from './ops/metrics';
import { startMetricsServer } from './ops/metrics-server';
import { Readiness } from './ops/readiness';
import { registerOps } from './ops/routes';
import { routesInterface, type Service, type ServiceInterface } from './service';
import { scanInterface } from './scan';
import { openStore, type Store } from './store';
import { keepIssuedKeys } from './store/api-keys';
import { newApiKey } from './store/secrets';
import { v1Interface } from './v1/routes';
import { v2Interface } from './v2/routes';
import { OIP_DOCUMENT } from './oip/openapi';
import { StreamServer } from './stream/stream-server';
import { OIP_HEALTH_PATHS, oipRestInterface, registerOipHealth } from './oip/rest';
import { grpcInterface } from './oip/grpc/server';
import { errorResponse } from './http/error-answers';
import { registerInspect } from './inspect/routes';
import { renderV1Error } from './v1/errors';
import { nameOfRenderer } from './error-renderers';
import { loadAddon } from './native/addon';
import { trimFreePagesEvery } from './native/malloc-trim';
import { tuneCollector } from './ops/v8-flags';
import { collectExternalInSteps } from './memory/external-collections';
import { niceBelowThisThread, takeNice } from './ops/loop-priority';

export function serviceVersion(): string {
  const pkg = JSON.parse(readFileSync(path.join(__dirname, '../../package.json'), 'utf8')) as { version: string };
  return pkg.version;
}

export interface RunningService {
  port: number;
  service: Service;
  /**
   * Drains: /readyz answers 503 at once, requests are still served for `drainDelayMs` (a load
   * balancer stops sending meanwhile), then the port closes and what is in flight finishes.
   */
  close(drainDelayMs?: number): Promise<void>;
  /** Ends a drain delay under way now (a second signal, or SIGINT after SIGTERM). */
  endDrainDelay(): void;
}

/** An address to print in a URL: the wildcard addresses become localhost, IPv6 gets brackets. */
function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return 'localhost';
  return host.includes(':') ? `[${host}]` : host;
}

export async function startService(config: Config): Promise<RunningService> {
  tuneCollector();
  collectExternalInSteps();
  const version = serviceVersion();
  metrics.collectProcessMetrics();
  sampleEventLoop();
  metrics.buildInfo.set({ version }, 1);
  const readiness = new Readiness((ready) => metrics.ready.set(ready ? 1 : 0));
  metrics.ready.set(0);
  const packs = await ModelRegistry.packIds(config.modelsDir);
  readiness.expect(packs.enabled);

  const keys = new KeyRing(config.apiKeys);

  // Each interface's error format on its paths; paths of no interface get v1's (the legacy root).
  const router = new Router(renderV1Error).mount('/v2', errorResponse).mount('/scan', errorResponse);
  registerOps(router, { readiness, keys, access: config.metrics.access });
  registerOipHealth(router, readiness);
  const stream = config.stream.maxConnections > 0 ? await StreamServer.start({ ...config.stream, maxFrameBytes: config.maxBodyBytes, requestTimeoutMs: config.requestTimeoutMs, defaultModel: config.defaultModel }) : null;
  const server = new HttpServer(router, {
    maxBodyBytes: config.maxBodyBytes,
    front: config.front,
    upstreamWaitMs: config.requestTimeoutMs,
    isReady: () => readiness.serving,
    alwaysOpen: (p) => (OPS_PATHS.has(p) || OIP_HEALTH_PATHS.has(p)) && router.match('GET', p).kind === 'found',
    onRequestEnd: recordRequest,
    onFrontAnswer: recordFrontAnswer,
    frontThreads: { entry: path.join(__dirname, 'front-thread-main.js'), dupFd: (fd) => loadAddon().dupFd(fd), nameOfRenderer },
    ...(stream ? { streamSocket: stream.socketPath } : {}),
  });
  const port = await server.listen(config.host, config.port).catch((error: unknown) => {
    stream?.close();
    throw error;
  });
  metrics.setSources({ requestsInFlight: () => server.requestsInFlight, upstream: () => server.upstream, frontThreadsHeap: () => server.frontThreadsHeap });
  let metricsServer: Awaited<ReturnType<typeof startMetricsServer>> | null = null;
  try {
    if (config.metrics.port !== null) metricsServer = await startMetricsServer(config.host, config.metrics.port);
    log.info('listening', { host: config.host, port, version, ...(metricsServer ? { metrics_port: metricsServer.port } : {}) });
    const started = await startInterfaces(config, { router, keys, readiness, version, packsDisabled: packs.disabled });
    stream?.serveWith(started.service, () => readiness.serving);
    lowerLoopThreads(config.loopNice, server);
    readiness.markReady();
    log.info('ready', {
      url: `http://${urlHost(config.host)}:${port}/v2/docs`,
      version,
      vips: started.vipsVersion,
      ort: started.ortVersion,
      malloc: started.malloc,
      models: started.service.registry.list().map((m) => m.id),
    });
    const delay = drainDelay();
    return {
      port,
      service: started.service,
      /**
       * Not ready, still serving for the drain delay; then stops accepting, answers every request
       * already received (bodies still uploading included), lets scan workers finish their scan,
       * then releases models and the store.
       */
      async close(drainDelayMs = 0) {
        readiness.markDraining();
        if (drainDelayMs > 0) {
          log.info('draining: not ready, still serving', { drain_delay_ms: drainDelayMs });
          await delay.wait(drainDelayMs);
        }
        server.stopListening();
        stream?.close();
        log.info('stopped accepting connections', { in_flight: server.requestsInFlight });
        await started.close(() => server.drain(10_000));
        metricsServer?.close();
      },
      endDrainDelay: () => delay.end(),
    };
  } catch (error) {
    // Start-up failed after the port opened: free it; main.ts reports the error and exits.
    server.stopListening();
    stream?.close();
    metricsServer?.close();
    throw error;
  }
}

/** The drain delay: a wait that a second signal can end early. */
function drainDelay(): { wait(ms: number): Promise<void>; end(): void } {
  let end = () => {};
  return {
    wait: (ms) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        end = () => {
          clearTimeout(timer);
          resolve();
        };
      }),
    end: () => end(),
  };
}

/**
 * The event loop's thread, then the HTTP front's threads, `steps` of nice below the analyses
 * (ops/loop-priority.ts): called once the addon's pool runs, so its threads keep the process's value.
 */
function lowerLoopThreads(steps: number, server: HttpServer): void {
  if (steps === 0) return;
  const nice = niceBelowThisThread(steps);
  if (!takeNice(nice, 'event loop')) return;
  server.setFrontNice(nice);
  log.info('loop priority', { nice, steps });
}

/**
 * Without CATCOMFORT_API_KEYS: with PostgreSQL, one key for every instance sharing the database
 * (stored hashed, accepted through the issued keys, printed by the instance that made it); with
 * SQLite, a key for this run. Printed once, on purpose: there is never a fixed default key. The
 * JSON line is for log collectors.
 */
async function generateKey(store: Store, keys: KeyRing): Promise<void> {
  if (store.kind === 'postgres') {
    const { id, key } = await store.apiKeys.fleetKey();
    const note = 'stored hashed in the database; every instance sharing it accepts it; `catcomfort keys revoke ID` has a new one made at the next start';
    if (key === null) return log.info('no CATCOMFORT_API_KEYS set; the fleet\'s generated API key is accepted', { key_id: id, note });
    process.stdout.write(`No CATCOMFORT_API_KEYS set; generated this API key for every instance sharing this database: ${key}\n`);
    return log.info('generated API key', { api_key: key, key_id: id, note });
  }
  const key = newApiKey();
  keys.addKey(key);
  process.stdout.write(`No CATCOMFORT_API_KEYS set; generated this API key for this run only: ${key}\n`);
  log.info('generated API key', { api_key: key, note: 'valid for this run only; set CATCOMFORT_API_KEYS to keep keys across runs' });
}

interface Started {
  service: Service;
  vipsVersion: string;
  ortVersion: string;
  /** The malloc serving the process, what the addon set of glibc's (native/malloc_policy.cc) and whether ONNX Runtime keeps its own CPU arena, for the ready line. */
  malloc: { allocator: string; own_mapping_bytes: number; arena_max: number; trim_interval_ms: number; cpu_arena: boolean };
  /** Closes every interface while `drain` (the public port's) runs, then releases the models and the store. */
  close(drain: () => Promise<void>): Promise<void>;
}

/** Store, packs (loaded and warmed up), keys issued with the CLI, and the interfaces (admin, v2, v1, inspect, OIP REST, gRPC, scans). */
async function startInterfaces(
  config: Config,
  ctx: { router: Router; keys: KeyRing; readiness: Readiness; version: string; packsDisabled: string[] },
): Promise<Started> {
  const store = await openStore({ dataDir: config.scan.dataDir, databaseUrl: config.scan.databaseUrl, databasePool: config.scan.databasePool });
  log.info('scan store open', { backend: store.kind });
  if (config.apiKeys.length === 0) await generateKey(store, ctx.keys);
  // Keys issued with the CLI live hashed in the store; a refresh picks up new ones and revocations.
  const apiKeys = keepIssuedKeys(store.apiKeys, 'api', (issued) => ctx.keys.setIssuedDigests(issued.map((k) => k.digest)));
  await apiKeys.first;

  const loadStarted = performance.now();
  const { addon, info, registry } = await loadModels(config, verdictsFile(config.scan.dataDir));
  const loadMs = Math.round(performance.now() - loadStarted);
  if (config.allocator === 'jemalloc' && info.mallocAllocator !== 'jemalloc') {
    throw new Error(`CATCOMFORT_ALLOCATOR=jemalloc, but the service runs on ${info.mallocAllocator}'s malloc: start it with bin/catcomfort-service on a host with libjemalloc.so.2 installed (Debian: libjemalloc2)`);
  }
  const trimmer = trimFreePagesEvery(addon, config.mallocTrimIntervalMs, () => registry.list().some((m) => m.batcher.load().inFlight > 0));
  for (const id of ctx.packsDisabled) log.info('model pack disabled in its manifest; not loaded', { model: id });
  for (const p of info.providers) {
    metrics.provider.set({ provider: p.name }, p.active ? 1 : 0);
    if (p.active) log.info('execution provider active', { provider: p.name });
    else log.warn('execution provider skipped', { provider: p.name, reason: p.reason });
  }
  if (!registry.get(config.defaultModel)) {
    throw new Error(`Default model "${config.defaultModel}" is not among the loaded packs in ${config.modelsDir}`);
  }
  // Warm-up: every session batch size and micro-batch size once, before requests are let in.
  const warmStarted = performance.now();
  await warmUpAll(registry, undefined, (id, state) => ctx.readiness.setModel(id, state));
  const warmUpMs = Math.round(performance.now() - warmStarted);
  // Loading and warming up freed several hundred MiB (model files, ONNX Runtime's graph work), which
  // the malloc would keep: given back once, before any request (docs/operations.md "Memory").
  const startUpTrim = await addon.trimFreePages();
  log.info('start-up phases', {
    probe_and_load_ms: loadMs,
    warm_up_ms: warmUpMs,
    pool_threads: config.poolThreads,
    freed_after_warm_up_mib: Math.max(0, Math.round((startUpTrim.residentBeforeBytes - startUpTrim.residentAfterBytes) / 1048576)),
  });
  for (const model of registry.list()) {
    const classifier = model.manifest.classifier;
    log.info('model loaded', {
      model: model.id,
      pack_version: model.manifest.version,
      detector_precision: model.precision,
      precision_reason: model.precisionReason,
      views: model.manifest.detector.views,
      classifier: classifier.reference ? 'reference' : 'trained',
      backbone_precision: model.backbonePrecision,
      verifier: model.manifest.verifier !== undefined,
    });
    const t = classifier.training;
    if (t) {
      log.info(`model ${model.id}: the classifier is a head trained by catcomfort train-head on the operator's photos`, {
        model: model.id,
        trained_at: t.trainedAt,
        base_pack: t.basePack,
        training_photos: t.counts.train.comfort + t.counts.train.discomfort,
        validation_photos: t.counts.validation.comfort + t.counts.validation.discomfort,
        validation_balanced_accuracy: t.validation.balancedAccuracy,
        validation_auc: t.validation.auc,
        threshold: t.validation.threshold,
      });
    }
    if (classifier.reference) {
      log.warn(
        `model ${model.id}: the classifier is an UNTRAINED reference network; its score is not a trained comfort signal. ` +
          `Train a head on your own labelled photos with "catcomfort train-head" (docs/training.md "Training the comfort head"), or drop trained weights into ` +
          `${path.join(model.dir, 'backbone' in classifier ? classifier.head.file : classifier.file)} and update its sha256 and reference=false in its manifest.json (see MODEL_CARD.md).`,
        { model: model.id },
      );
    }
  }

  const packs = await startPackControl(config, { addon, info, registry, store });
  ctx.readiness.setVersions(() => versionStates(registry, packs.control));
  const service: Service = { config, keys: ctx.keys, registry, version: ctx.version, docsAssets: loadDocsAssets() };
  // Started in this order; closed together.
  const interfaces: ServiceInterface[] = [
    packs.admin,
    v2Interface(service, [OIP_DOCUMENT]),
    v1Interface(service),
    routesInterface(({ router }) => registerInspect(router)),
    oipRestInterface(service),
    grpcInterface(service, { host: config.host, port: config.grpcPort }),
    scanInterface(config, { service, store }),
  ];
  for (const i of interfaces) await i.start({ router: ctx.router, readiness: ctx.readiness });
  metrics.setSources({ queueDepths: () => registry.list().map((m) => ({ model: m.id, queued: m.batcher.stats().queued })), imageBlocks: () => addon.imageBlocks(), mallocBytes: () => addon.mallocBytes() });
  return {
    service,
    vipsVersion: info.vipsVersion,
    ortVersion: info.ortVersion,
    malloc: { allocator: info.mallocAllocator, own_mapping_bytes: info.mallocOwnMappingBytes, arena_max: info.mallocArenaMax, trim_interval_ms: config.mallocTrimIntervalMs, cpu_arena: config.cpuArena },
    async close(drain) {
      apiKeys.stop();
      await packs.close();
      await Promise.all([drain(), ...interfaces.map((i) => i.close())]);
      await trimmer.stop();
      await registry.closeAll();
      await store.close();
    },
  };
}
