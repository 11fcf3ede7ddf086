// The scan interface at start: its routes on the public router, the store's health (read by
// /readyz and the metrics), the webhook dispatcher and the scan workers, started; closing lets the
// workers finish their scan, then the dispatcher.
import type { Config } from '../config';
import { log } from '../log';
import { metrics } from '../ops/metrics';
import type { InterfaceContext, Service, ServiceInterface } from '../service';
import type { Store } from '../store';
import { StoreHealth } from './store-health';
import { CredentialVerifier } from './auth';
import { FailureThrottle } from './failure-throttle';
import { fetchPolicy } from './fetch';
import { presentEvent } from './present';
import { registerScan } from './routes';
import { WebhookDispatcher } from './webhooks/dispatcher';
import { ScanWorkers } from './worker';

/** Largest image a scan fetches. */
const MAX_IMAGE_BYTES = 4 * 1024 * 1024;

/** The scan interface: started, its routes and workers; closed, the workers finish their scan, then the dispatcher. */
export function scanInterface(config: Config, parts: { service: Service; store: Store }): ServiceInterface {
  let stop: (() => Promise<void>) | null = null;
  return {
    start: async (ctx) => {
      stop = startScan(config, { ...parts, ...ctx });
    },
    close: async () => stop?.(),
  };
}

function startScan(config: Config, parts: InterfaceContext & { service: Service; store: Store }): () => Promise<void> {
  const { service, store } = parts;
  const scan = config.scan;
  const scanModel = service.registry.get(scan.model);
  if (!scanModel) throw new Error(`CATCOMFORT_SCAN_MODEL "${scan.model}" is not a loaded pack`);
  if (scan.allowPrivateUrls) log.warn('CATCOMFORT_FETCH_ALLOW_PRIVATE is on: scan URLs may reach private and loopback addresses (UNSAFE)');
  const health = new StoreHealth();
  parts.readiness.setScanStore(() => health.state);
  const policy = fetchPolicy({ allowPrivate: scan.allowPrivateUrls });
  const hooks = scan.webhooks;
  const webhooks = new WebhookDispatcher(store, health, {
    ...hooks,
    idlePollMs: 500,
    policy: { ...policy, connectTimeoutMs: Math.min(policy.connectTimeoutMs, hooks.timeoutMs) },
    body: (s, delivery) => presentEvent(s, { id: scan.model, version: service.version }, delivery),
  });
  // Unset: one worker per image the scan model's pipeline holds, so a backlog fills its batches.
  const { maxBatchSize, maxInFlight } = scanModel.batcher.options;
  const workerCount = scan.workers ?? maxBatchSize * maxInFlight;
  log.info('scan workers', { workers: workerCount, chosen_by: scan.workers === null ? 'batch size x batches in flight' : 'CATCOMFORT_SCAN_WORKERS' });
  const workers = new ScanWorkers(store, health, service.registry, scan.model, webhooks, {
    ...scan,
    workers: workerCount,
    idlePollMs: 250,
    fetchPolicy: policy,
    serviceVersion: service.version,
  });
  const verifier = new CredentialVerifier(store, health, new FailureThrottle(scan.authFailuresPerMinute));
  registerScan(parts.router, { service, store, health, workers, verifier, maxImageBytes: MAX_IMAGE_BYTES, fetchPolicy: policy });
  metrics.setSources({
    scanQueue: () => health.track('queue_depth', () => store.scans.queueDepth()),
    webhookQueue: () => health.track('queue_depth', () => store.webhooks.depth()),
  });
  workers.start();
  webhooks.start();
  return () => workers.stop().then(() => webhooks.stop());
}
