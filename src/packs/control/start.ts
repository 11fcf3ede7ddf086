// Pack control at start: the fleet's recorded pack versions applied before the service turns
// ready, a sync with the store every CATCOMFORT_PACK_SYNC_MS followed by this instance's heartbeat
// (the admin listener's fleet view), and (with CATCOMFORT_ADMIN_PORT) the
// admin listener with its keys, issued ones reloaded with the API keys; the listener opens when
// start.ts starts the interfaces.
import os from 'node:os';
import type { Config } from '../../config';
import { log } from '../../log';
import type { NativeAddon, NativeInfo } from '../../native/addon';
import { PackControl } from './pack-control';
import { probePack } from '../probe/provider-probe';
import type { ModelRegistry } from '../registry';
import { registryOptions } from '../runtime';
import type { VersionStates } from '../../ops/readiness';
import type { Store } from '../../store';
import { keepIssuedKeys } from '../../store/api-keys';
import { newApiKey } from '../../store/secrets';
import { AdminKeys } from './admin-keys';
import { startAdminServer } from './admin-server';
import { fleetView } from './fleet-view';

export interface PackControlRunning {
  control: PackControl;
  /** The admin listener, in the shape of every interface (src/service.ts ServiceInterface): started with the others, closed with them. */
  admin: { start(): Promise<void>; close(): Promise<void> };
  /** Stops the sync with the store and the reload of issued admin keys; this instance leaves the fleet view. */
  close(): Promise<void>;
}

/** /readyz's versions: each loaded version's role, and the versions being loaded. */
export function versionStates(registry: ModelRegistry, control: PackControl): VersionStates {
  const states: VersionStates = {};
  for (const pack of registry.all()) states[pack.id] = Object.fromEntries(pack.list().map((v) => [v.model.version, v.role]));
  for (const [name, state] of Object.entries(control.loadingStates())) {
    const [id, version] = name.split('@') as [string, string];
    (states[id] ??= {})[version] = state;
  }
  return states;
}

/** With an accelerated provider in use, a new version is probed on the providers in use first, as packs are at start. */
function gpuProbe(config: Config, info: NativeInfo): ((dir: string) => Promise<string | null>) | null {
  const active = config.providers.filter((name) => info.providers.some((p) => p.name === name && p.active));
  if (!active.some((p) => p !== 'cpu')) return null;
  return (dir) => probePack({ ...config, providers: active, pinnedMemory: false }, dir);
}

export async function startPackControl(config: Config, parts: { addon: NativeAddon; info: NativeInfo; registry: ModelRegistry; store: Store }): Promise<PackControlRunning> {
  const control = new PackControl({
    addon: parts.addon,
    registry: parts.registry,
    registryOptions: registryOptions(config, parts.info),
    rollouts: parts.store.rollouts,
    pinned: new Set([config.defaultModel, config.scan.model, 'bc-v1', 'bc-legacy']),
    keepPreviousMs: config.admin.keepPreviousMs,
    probe: gpuProbe(config, parts.info),
  });
  const self = { instanceId: `${os.hostname()}/${process.pid}`, host: os.hostname(), startedAt: new Date().toISOString() };
  // Each sync, then this instance's heartbeat with what it applied (the fleet view).
  const syncAndBeat = async () => {
    await control.sync();
    await parts.store.fleet.beat({ ...self, applied: control.appliedGenerations(), versions: versionStates(parts.registry, control) });
  };
  await syncAndBeat().catch((error: unknown) => log.warn('pack versions could not be read from the store at start', { error: String(error) }));
  const timer = setInterval(() => void syncAndBeat().catch((error: unknown) => log.warn('pack version sync failed', { error: String(error) })), config.admin.syncMs);
  timer.unref();
  const fleet = () => fleetView({ rollouts: parts.store.rollouts, instances: parts.store.fleet, syncMs: config.admin.syncMs, self: self.instanceId });

  const keys = new AdminKeys(config.admin.keys);
  const issued = keepIssuedKeys(parts.store.apiKeys, 'admin', (k) => keys.setIssued(k));
  let server: Awaited<ReturnType<typeof startAdminServer>> | null = null;
  const admin = {
    async start() {
      if (config.admin.port === null) return;
      await issued.first;
      if (config.admin.keys.length === 0) {
        const key = newApiKey();
        keys.addConfigured(key);
        process.stdout.write(`No CATCOMFORT_ADMIN_KEYS set; generated this admin key for this run only: ${key}\n`);
      }
      server = await startAdminServer(config.admin.host, config.admin.port, { keys, control, registry: parts.registry, fleet });
      log.info('admin listening', { host: config.admin.host, admin_port: server.port });
    },
    close: async () => server?.close(),
  };
  return {
    control,
    admin,
    async close() {
      clearInterval(timer);
      issued.stop();
      await parts.store.fleet.leave(self.instanceId).catch((error: unknown) => log.warn('could not leave the fleet view', { error: String(error) }));
    },
  };
}
