// Pack versions changed while serving: load a version beside the serving one (validated, sha256
// checked and warmed up exactly as at start, before it takes any request), give it a role
// (standby, shadow, canary), promote it, roll back, unload. One action at a time. Requests already
// queued or running on a version finish on it: an unloaded version drains its queue before its
// sessions are released. The store's record is the fleet's truth (PackRollouts): an action first
// brings this instance up to it, then acts, then records by compare-and-set on the generation it
// acted on; an action another instance recorded first, or one the store could not take, is undone
// here and answered as such. Every instance converges to what is recorded (sync), so a fleet changes
// version together. The caller (the admin routes) writes the audit line of each action.
import path from 'node:path';
import { ApiError } from '../../errors';
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
  /** The pack id is unloaded fleet-wide. */
  unloaded: boolean;
  generation: number;
  updatedBy: string;
}

/** Where the fleet's pack versions are recorded (src/store/rollouts.ts). */
export interface RolloutStore {
  all(): Promise<Rollout[]>;
  /** Records a change if the pack's generation is still `known` (0: none yet); the new generation, or null when another instance recorded first. */
  record(packId: string, change: Pick<Rollout, 'serving' | 'other' | 'unloaded'>, updatedBy: string, known: number): Promise<number | null>;
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
  /** Per pack id, the generation this instance has applied, and the newest it has read. */
  private readonly applied = new Map<string, number>();
  private readonly recorded = new Map<string, number>();
  /** Pack ids whose versions here are not what is recorded (an action undone or not recorded): converged at the next sync. */
  private readonly diverged = new Set<string>();
  /** Each pack's serving version at start: what a pack never recorded goes back to. */
  private readonly baseline: Map<string, { version: string; dir: string }>;
  private readonly expiry = new Map<string, NodeJS.Timeout>();

  constructor(private readonly o: PackControlOptions) {
    this.baseline = new Map(o.registry.all().map((p) => [p.id, { version: p.current.version, dir: p.current.dir }]));
  }

  /** Versions being loaded now, as `id@version` -> state. */
  loadingStates(): Record<string, LoadingState> {
    return Object.fromEntries(this.loading);
  }

  /** Per pack id, the rollout generation applied here (the fleet view's `applied`). */
  appliedGenerations(): Record<string, number> {
    return Object.fromEntries(this.applied);
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
    let id = '';
    return this.act(actor, async () => (id = await this.loadVersion(path.resolve(dir), role, share)), () => id);
  }

  route(id: string, version: string, role: CandidateRole, share: number, actor: string): Promise<ActionResult> {
    return this.act(actor, async () => this.pack(id).route(version, role, share), () => id);
  }

  promote(id: string, version: string, actor: string): Promise<ActionResult> {
    return this.act(actor, async () => this.promoteLocally(id, version), () => id);
  }

  /** The previous version serves again; the one that served stays loaded as previous. */
  rollback(id: string, actor: string): Promise<ActionResult> {
    return this.act(
      actor,
      async () => {
        const previous = this.pack(id).list().find((v) => v.role === 'previous');
        if (!previous) throw new VersionError(`${id} has no previous version loaded to roll back to (${this.pack(id).describe()})`);
        this.promoteLocally(id, previous.model.version);
      },
      () => id,
    );
  }

  /** Unloads a version beside the serving one, or (without a version) a whole pack id that is not pinned, on every instance. */
  unload(id: string, version: string | null, actor: string): Promise<ActionResult> {
    if (version !== null) return this.act(actor, () => this.closeAll([this.removeLocally(id, version)]), () => id);
    let last: Rollout['serving'] | null = null;
    return this.act(
      actor,
      async () => {
        if (this.o.pinned.has(id)) throw new VersionError(`${id} cannot be unloaded: the service needs it (default model, scan model or v1); unload ${id}@VERSION to drop a version beside it`);
        const current = this.pack(id).current;
        last = { version: current.version, dir: current.dir };
        await this.closeAll(this.o.registry.removePack(id));
      },
      () => id,
      () => ({ serving: last!, other: null, unloaded: true }),
    );
  }

  /** Brings every recorded pack to its recorded versions (other instances' actions); a pack that fails is logged and tried again next time. */
  sync(): Promise<void> {
    return this.serial(() => this.pull());
  }

  /**
   * One action: this instance first brought up to the record (a store that cannot be read refuses
   * the action before anything changes), then `change`, then the result recorded by compare-and-set.
   */
  private act(actor: string, change: () => Promise<unknown>, idOf: () => string, recordOf?: () => Pick<Rollout, 'serving' | 'other' | 'unloaded'>): Promise<ActionResult> {
    return this.serial(async () => {
      await this.pull().catch((error: unknown) => {
        throw new ApiError('unavailable', `The pack versions recorded for the fleet cannot be read (${(error as Error).message}); nothing was changed.`);
      });
      await change();
      const id = idOf();
      const known = this.recorded.get(id) ?? 0;
      let generation: number | null;
      try {
        generation = await this.o.rollouts.record(id, recordOf ? recordOf() : this.localRecord(id), actor, known);
      } catch (error) {
        this.diverged.add(id);
        await this.pull().catch(() => undefined);
        throw new ApiError(
          'unavailable',
          `${id}: done on this instance but not recorded for the fleet (${(error as Error).message}); this instance goes back to the recorded versions ${this.diverged.has(id) ? 'at its next sync' : 'now'}.`,
        );
      }
      if (generation === null) {
        this.diverged.add(id);
        await this.pull().catch(() => undefined);
        throw new VersionError(`${id}: another instance recorded a change first (after generation ${known}); this action was undone here and the fleet's record applied. See GET /fleet, then try again`);
      }
      this.applied.set(id, generation);
      this.recorded.set(id, generation);
      return { pack: id, versions: this.o.registry.versions(id)?.describe() ?? 'none' };
    });
  }

  /** This instance's versions of a pack, as a record. */
  private localRecord(id: string): Pick<Rollout, 'serving' | 'other' | 'unloaded'> {
    const [serving, other] = this.pack(id).list();
    return {
      serving: { version: serving!.model.version, dir: serving!.model.dir },
      other: other ? { version: other.model.version, dir: other.model.dir, role: other.role as Exclude<typeof other.role, 'serving'>, share: other.share } : null,
      unloaded: false,
    };
  }

  /** Reads the record and converges every pack behind it, and every diverged one. */
  private async pull(): Promise<void> {
    const rollouts = await this.o.rollouts.all();
    for (const rollout of rollouts) {
      this.recorded.set(rollout.packId, rollout.generation);
      if (!this.diverged.has(rollout.packId) && (this.applied.get(rollout.packId) ?? 0) >= rollout.generation) continue;
      await this.convergeLogged(rollout.packId, rollout, () => this.converge(rollout));
    }
    const recordedIds = new Set(rollouts.map((r) => r.packId));
    for (const id of [...this.diverged].filter((d) => !recordedIds.has(d))) await this.convergeLogged(id, null, () => this.backToBaseline(id));
  }

  private async convergeLogged(id: string, rollout: Rollout | null, work: () => Promise<void>): Promise<void> {
    try {
      await work();
      this.diverged.delete(id);
      if (rollout) this.applied.set(id, rollout.generation);
      log.info('pack versions converged', { pack: id, versions: this.o.registry.versions(id)?.describe() ?? 'none', generation: rollout?.generation ?? 0, by: rollout?.updatedBy ?? 'start-up' });
    } catch (error) {
      log.warn('pack versions could not converge; tried again at the next sync', { pack: id, error: (error as Error).message });
    }
  }

  /** A pack never recorded: its versions at start, or unloaded if it was not there. */
  private async backToBaseline(id: string): Promise<void> {
    const start = this.baseline.get(id);
    if (start) return this.converge({ packId: id, serving: start, other: null, unloaded: false, generation: 0, updatedBy: 'start-up' });
    const pack = this.o.registry.versions(id);
    if (pack) await this.closeAll(this.o.registry.removePack(id));
  }

  private async converge(r: Rollout): Promise<void> {
    let pack = this.o.registry.versions(r.packId);
    if (r.unloaded) {
      if (!pack) return;
      if (this.o.pinned.has(r.packId)) throw new VersionError(`${r.packId} is unloaded for the fleet but this instance needs it (default model, scan model or v1)`);
      await this.closeAll(this.o.registry.removePack(r.packId));
      return;
    }
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
}
