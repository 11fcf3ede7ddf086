// Start-up: native runtime, model packs, keys, routes, listening socket; and shutdown.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from './config';
import { KeyRing } from './http/auth';
import { loadDocsAssets } from './http/docs';
import { Router } from './http/router';
import { HttpServer } from './http/server';
import { log } from './log';
import { loadModels, warmUpAll } from './models/runtime';
import type { Service } from './service';
import { CredentialVerifier } from './scan/auth';
import { FailureThrottle } from './scan/failure-throttle';
import { fetchPolicy } from './scan/fetch';
import { registerScan } from './scan/routes';
import { openStore } from './scan/store';
import { ScanWorkers } from './scan/worker';
import { registerV1 } from './v1/routes';
import { registerV2 } from './v2/routes';

export function serviceVersion(): string {
  const pkg = JSON.parse(readFileSync(path.join(__dirname, '../../package.json'), 'utf8')) as { version: string };
  return pkg.version;
}

export interface RunningService {
  port: number;
  service: Service;
  close(): Promise<void>;
}

export async function startService(config: Config): Promise<RunningService> {
  const { info, registry } = await loadModels(config);
  for (const id of registry.disabled) log.info('model pack disabled in its manifest; not loaded', { model: id });
  for (const p of info.providers) {
    if (p.active) log.info('execution provider active', { provider: p.name });
    else log.warn('execution provider skipped', { provider: p.name, reason: p.reason });
  }
  if (!registry.get(config.defaultModel)) {
    throw new Error(`Default model "${config.defaultModel}" is not among the loaded packs in ${config.modelsDir}`);
  }
  // Warm-up: every session batch size and micro-batch size once, before the socket opens.
  await warmUpAll(registry);
  for (const model of registry.list()) {
    const classifier = model.manifest.classifier;
    log.info('model loaded', {
      model: model.id,
      pack_version: model.manifest.version,
      views: model.manifest.detector.views,
      classifier: classifier.reference ? 'reference' : 'trained',
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
          `Train a head on your own labelled photos with "catcomfort train-head" (README, "Training the comfort head"), or drop trained weights into ` +
          `${path.join(model.dir, classifier.file)} and update classifier.sha256 and reference=false in its manifest.json (see MODEL_CARD.md).`,
        { model: model.id },
      );
    }
  }

  const keys = new KeyRing(config.apiKeys);
  if (config.apiKeys.length === 0) {
    const key = KeyRing.generateKey();
    keys.addKey(key);
    // Printed once, on purpose: there is never a fixed default key.
    process.stdout.write(`No CATCOMFORT_API_KEYS set; generated this API key for this run only: ${key}\n`);
  }

  const store = await openStore({ dataDir: config.scan.dataDir, ...(config.scan.databaseUrl ? { databaseUrl: config.scan.databaseUrl } : {}) });
  log.info('scan store open', { backend: store.kind });
  // Keys issued with the CLI live hashed in the store; a refresh picks up new ones and revocations.
  const refreshKeys = () => store.activeApiKeyDigests().then((d) => keys.setIssuedDigests(d), (e: unknown) => log.warn('api key refresh failed', { error: String(e) }));
  await refreshKeys();
  const keyTimer = setInterval(refreshKeys, 30_000);
  keyTimer.unref();

  const version = serviceVersion();
  const service: Service = { config, keys, registry, version, docsAssets: loadDocsAssets() };
  const scanModel = registry.get(config.scan.model);
  if (!scanModel) throw new Error(`CATCOMFORT_SCAN_MODEL "${config.scan.model}" is not a loaded pack`);
  if (config.scan.allowPrivateUrls) log.warn('CATCOMFORT_FETCH_ALLOW_PRIVATE is on: scan URLs may reach private and loopback addresses (UNSAFE)');
  const workers = new ScanWorkers(store, scanModel, {
    workers: config.scan.workers,
    leaseMs: config.scan.leaseMs,
    maxAttempts: config.scan.maxAttempts,
    idlePollMs: 250,
    retentionMs: config.scan.retentionMs,
    fetchPolicy: fetchPolicy({ allowPrivate: config.scan.allowPrivateUrls }),
    serviceVersion: version,
  });
  const router = new Router();
  registerV2(router, service);
  registerV1(router, service);
  registerScan(router, { service, store, workers, verifier: new CredentialVerifier(store, new FailureThrottle(config.scan.authFailuresPerMinute)), maxImageBytes: 4 * 1024 * 1024 });
  const server = new HttpServer(router, { maxBodyBytes: config.maxBodyBytes });
  const port = await server.listen(config.host, config.port);
  workers.start();
  log.info('listening', {
    host: config.host,
    port,
    version,
    vips: info.vipsVersion,
    ort: info.ortVersion,
    models: registry.list().map((m) => m.id),
  });

  return {
    port,
    service,
    /**
     * Stops accepting, answers every request already received (bodies still uploading included),
     * lets scan workers finish their scan, then releases models and the store.
     */
    async close() {
      server.stopListening();
      clearInterval(keyTimer);
      await Promise.all([server.drain(10_000), workers.stop()]);
      server.close();
      await registry.closeAll();
      await store.close();
    },
  };
}
