// Pack versions changed while serving: load a version beside the serving one (validated, sha256
// checked and warmed up exactly as at start, before it takes any request), give it a role
// (standby, shadow, canary), promote it, roll back, unload. One action at a time. Requests already
// queued or running on a version finish on it: an unloaded version drains its queue before its
// sessions are released. Each action that succeeds is recorded in the store (PackRollouts), and
// every instance converges to what is recorded (sync), so a fleet changes version together. The
// caller (the admin routes) writes the audit line of each action.
import path from 'node:path';
import { log } from '../../log';
import type { NativeAddon } from '../../native/addon';
import type { Model } from '../model';
import { checkPackFolder, PackError, readManifest } from '../pack';
import { loadModel, type ModelRegistry, type RegistryOptions } from '../registry';
import { readWarmUpSample } from '../runtime';
import { VersionError, type CandidateRole, type PackVersions } from '../versions';

/** A pack id's recorded versions (the store's PackRollouts gives them). */
export interface Rollout {
  packId: string;
  serving: { version: string; dir: string };
  other: { version: string; dir: string; role: CandidateRole | 'previous'; share: number } | null;
  generation: number;
  updatedBy: string;
}

/** Where the fleet's pack versions are recorded (src/store/rollouts.ts). */
export interface RolloutStore {
  all(): Promise<Rollout[]>;
  /** Returns the new generation. */
  record(packId: string, serving: Rollout['serving'], other: Rollout['other'], updatedBy: string): Promise<number>;
  forget(packId: string): Promise<void>;
}

/** A version being loaded or warmed up, for /readyz. */
export type LoadingState = 'loading' | 'warming';

export interface PackControlOptions {
  addon: NativeAddon;
  registry: ModelRegistry;
  registryOptions: RegistryOptions;
  rollouts: RolloutStore;
  /** Pack ids that cannot be unloaded as a whole (the default model, the scan model, v1's). */
  pinned: ReadonlySet<string>;
  /** How long a previous version stays loaded after a promotion or rollback; 0: until unloaded. */
  keepPreviousMs: number;
  /** With a GPU provider in use: the pack folder probed in a child first (provider-probe.ts); null when it passed, else why not. */
  probe: ((dir: string) => Promise<string | null>) | null;
}

export interface ActionResult {
  pack: string;
  versions: string;
}


export class PackControl {
  private chain: Promise<unknown> = Promise.resolve();
  private readonly loading = new Map<string, LoadingState>();
  private readonly applied = new Map<string, number>();
  private readonly expiry = new Map<string, NodeJS.Timeout>();

  constructor(private readonly o: PackControlOptions) {}

  /** Versions being loaded now, as `id@version` -> state. */
  loadingStates(): Record<string, LoadingState> {
    return Object.fromEntries(this.loading);
  }

  /** Runs actions one at a time, in the order asked. */
  private serial<T>(action: () => Promise<T>): Promise<T> {
    const run = this.chain.then(action, action);
    this.chain = run.catch(() => undefined);
    return run;
  }

  private pack(id: string): PackVersions {
    const pack = this.o.registry.versions(id);
    if (!pack) throw new VersionError(`${id} is not loaded`);
    return pack;
  }

  /** Loads the pack in `dir`: a new id serves at once; a new version of a loaded id is added beside it in `role`. */
  load(dir: string, role: CandidateRole, share: number, actor: string): Promise<ActionResult> {
    return this.serial(async () => {
      const result = await this.loadVersion(path.resolve(dir), role, share);
      return this.done(result, actor);
    });
  }

  route(id: string, version: string, role: CandidateRole, share: number, actor: string): Promise<ActionResult> {
    return this.serial(async () => {
      this.pack(id).route(version, role, share);
      return this.done(id, actor);
    });
  }

  promote(id: string, version: string, actor: string): Promise<ActionResult> {
    return this.serial(async () => {
      this.promoteLocally(id, version);
      return this.done(id, actor);
    });
  }

  /** The previous version serves again; the one that served stays loaded as previous. */
  rollback(id: string, actor: string): Promise<ActionResult> {
    return this.serial(async () => {
      const previous = this.pack(id).list().find((v) => v.role === 'previous');
      if (!previous) throw new VersionError(`${id} has no previous version loaded to roll back to (${this.pack(id).describe()})`);
      this.promoteLocally(id, previous.model.version);
      return this.done(id, actor);
    });
  }

  /** Unloads a version beside the serving one, or (without a version) a whole pack id that is not pinned. */
  unload(id: string, version: string | null, actor: string): Promise<ActionResult> {
    return this.serial(async () => {
      if (version === null) {
        if (this.o.pinned.has(id)) throw new VersionError(`${id} cannot be unloaded: the service needs it (default model, scan model or v1); unload ${id}@VERSION to drop a version beside it`);
        await this.closeAll(this.o.registry.removePack(id));
        await this.o.rollouts.forget(id);
        this.applied.delete(id);
        return { pack: id, versions: 'none' };
      }
      await this.closeAll([this.removeLocally(id, version)]);
      return this.done(id, actor);
    });
  }

  /** Brings every recorded pack to its recorded versions (other instances' actions); a pack that fails is logged and tried again next time. */
  sync(): Promise<void> {
    return this.serial(async () => {
      for (const rollout of await this.o.rollouts.all()) {
        if ((this.applied.get(rollout.packId) ?? 0) >= rollout.generation) continue;
        try {
          await this.converge(rollout);
          this.applied.set(rollout.packId, rollout.generation);
          log.info('pack versions converged', { pack: rollout.packId, versions: this.o.registry.versions(rollout.packId)?.describe(), generation: rollout.generation, by: rollout.updatedBy });
        } catch (error) {
          log.warn('pack versions could not converge; tried again at the next sync', { pack: rollout.packId, error: (error as Error).message });
        }
      }
    });
  }

  private async converge(r: Rollout): Promise<void> {
    let pack = this.o.registry.versions(r.packId);
    if (!pack) {
      await this.loadVersion(r.serving.dir, 'standby', 0);
      pack = this.pack(r.packId);
    }
    if (pack.current.version !== r.serving.version) {
      if (!pack.find(r.serving.version)) {
        const other = pack.list()[1];
        if (other) await this.closeAll([this.removeLocally(r.packId, other.model.version)]);
        await this.loadVersion(r.serving.dir, 'standby', 0);
      }
      this.promoteLocally(r.packId, r.serving.version);
    }
    const other = pack.list()[1];
    const wanted = r.other;
    if (other && (!wanted || other.model.version !== wanted.version)) await this.closeAll([this.removeLocally(r.packId, other.model.version)]);
    if (!wanted || wanted.role === 'previous') return; // a previous version is not loaded anew: it only serves a rollback
    if (!pack.find(wanted.version)) await this.loadVersion(wanted.dir, wanted.role, wanted.share);
    else pack.route(wanted.version, wanted.role, wanted.share);
  }

  /** Validates, loads and warms up the pack in `dir`, then adds it: `pack id@version`. */
  private async loadVersion(dir: string, role: CandidateRole, share: number): Promise<string> {
    const manifest = await readManifest(dir);
    checkPackFolder(dir, manifest);
    const name = `${manifest.id}@${manifest.version}`;
    const existing = this.o.registry.versions(manifest.id);
    existing?.checkRoom(manifest.version);
    if (this.loading.has(name)) throw new VersionError(`${name} is being loaded`);
    const started = performance.now();
    this.loading.set(name, 'loading');
    let model: Model | null = null;
    try {
      const failed = this.o.probe ? await this.o.probe(dir) : null;
      if (failed !== null) throw new PackError(`${name} failed its probe on the execution providers in use (${failed}); nothing was loaded`);
      model = await loadModel(this.o.addon, dir, this.o.registryOptions);
      this.loading.set(name, 'warming');
      await model.warmUp(readWarmUpSample());
      if (existing) existing.add(model, role, share);
      else this.o.registry.addPack(model);
      log.info('pack version loaded', { pack: name, dir, role: existing ? role : 'serving', ms: Math.round(performance.now() - started), host_memory: model.hostMemory() });
    } catch (error) {
      await model?.close().catch(() => undefined);
      if (error instanceof PackError || error instanceof VersionError) throw error;
      throw new PackError(`${name} could not be loaded from ${dir}: ${(error as Error).message}`);
    } finally {
      this.loading.delete(name);
    }
    return manifest.id;
  }

  private promoteLocally(id: string, version: string): void {
    const pack = this.pack(id);
    pack.promote(version);
    this.expirePreviousLater(id, pack.list()[1]!.model.version);
  }

  /** After keepPreviousMs the previous version is unloaded, unless it was promoted or unloaded meanwhile. */
  private expirePreviousLater(id: string, version: string): void {
    clearTimeout(this.expiry.get(id));
    if (this.o.keepPreviousMs === 0) return;
    const timer = setTimeout(() => {
      this.expiry.delete(id);
      void this.serial(async () => {
        const previous = this.o.registry.versions(id)?.list().find((v) => v.role === 'previous' && v.model.version === version);
        if (!previous) return;
        await this.closeAll([this.removeLocally(id, version)]);
        log.info('previous pack version unloaded after its keep time', { pack: `${id}@${version}` });
      }).catch((error: unknown) => log.warn('previous pack version could not be unloaded', { pack: `${id}@${version}`, error: String(error) }));
    }, this.o.keepPreviousMs);
    timer.unref();
    this.expiry.set(id, timer);
  }

  private removeLocally(id: string, version: string): Model {
    const model = this.pack(id).remove(version);
    if (!this.pack(id).list().some((v) => v.role === 'previous')) clearTimeout(this.expiry.get(id));
    return model;
  }

  /** Closes removed versions: each drains its queued requests first. */
  private async closeAll(models: Model[]): Promise<void> {
    await Promise.all(models.map((m) => m.close()));
  }

  /** Records the pack's versions for the fleet. */
  private async done(id: string, actor: string): Promise<ActionResult> {
    const pack = this.pack(id);
    const [serving, other] = pack.list();
    const generation = await this.o.rollouts.record(
      id,
      { version: serving!.model.version, dir: serving!.model.dir },
      other ? { version: other.model.version, dir: other.model.dir, role: other.role as Exclude<typeof other.role, 'serving'>, share: other.share } : null,
      actor,
    );
    this.applied.set(id, generation);
    return { pack: id, versions: pack.describe() };
  }
}
