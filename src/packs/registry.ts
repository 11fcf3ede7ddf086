// The loaded model packs by id: which pack folders there are, loading each (src/packs/pack.ts)
// into its native pipeline and Model (src/packs/model.ts), the versions of each id
// (src/packs/versions.ts), and closing them all.
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { BatchingConfig } from '../pipeline/batcher';
import type { LowLoadSessions, NativeAddon, SimulatedDeviceStats } from '../native/addon';
import type { SimulatedDevice } from './model';
import { log } from '../log';
import { Model } from './model';
import { checkPackFolder, PackError, readManifest, type Precision } from './pack';
import { loadProven } from './precision-check';
import { PackVersions, VersionError } from './versions';

export interface RegistryOptions {
  modelsDir: string;
  maxPixels: number;
  batching: BatchingConfig;
  /** Warm-up may shrink maxBatchSize to the knee of the session sizes (batching-plan.ts); default false. */
  fitBatchToSessions?: boolean;
  /** How the batching was chosen (batching-plan.ts), for /v2/stats; default 'settings'. */
  batchingChosenBy?: string;
  sessionBatch: number | null;
  /** PackLimits.lowLoad; also what the model reports (/v2/stats `lowLoad`). */
  lowLoad: LowLoadSessions;
  /** The precision wanted (PackLimits.precision), proven by the int8 self-check (precision-check.ts). */
  precision: Precision;
  /** true when CATCOMFORT_PRECISION set the precision: int8 then serves even if its self-check fails. */
  precisionForced: boolean;
  /** PackLimits.jpegShrinkOnLoad (default true). */
  jpegShrinkOnLoad?: boolean;
  /** CATCOMFORT_BENCH_FREE_MODEL: after warm-up, analyses answer the warm-up result without running (Model). */
  freeModel?: boolean;
  /** CATCOMFORT_BENCH_SIMULATE: from warm-up on, session Runs are simulated on this device (Model.simulateDevice). */
  simulateDevice?: SimulatedDevice | null;
}

/** Loads the pack in `dir` into a Model (not warmed up), at the precision it proved here. */
export async function loadModel(addon: NativeAddon, dir: string, options: RegistryOptions): Promise<Model> {
  const { pack, pipeline, choice } = await loadProven(addon, dir, options, { precision: options.precision, forced: options.precisionForced });
  const batching = { config: options.batching, fitToSessions: options.fitBatchToSessions ?? false, chosenBy: options.batchingChosenBy ?? 'settings' };
  if (options.freeModel) log.warn('CATCOMFORT_BENCH_FREE_MODEL is on: after warm-up every analysis answers the warm-up photo\'s result (benchmarks only)', { model: pack.manifest.id });
  const simulate = options.simulateDevice ?? null;
  if (simulate) log.warn(`CATCOMFORT_BENCH_SIMULATE is on: session Runs are SIMULATED on device profile "${simulate.profile.name}"${simulate.decode ? ', decoding too,' : ''} and every analysis answers the warm-up photo's outputs (benchmarks and tests only)`, { model: pack.manifest.id, device_profile: simulate.profile.name, simulated_decode: simulate.decode });
  return new Model(pack.manifest, dir, addon, pipeline, options.maxPixels, batching, pack.precision, pack.backbonePrecision, choice.reason, options.lowLoad, options.freeModel ?? false, simulate);
}

export class ModelRegistry {
  private constructor(
    private readonly packs: Map<string, PackVersions>,
    /** Ids of the packs whose manifest says "disabled": validated, not loaded. */
    readonly disabled: string[],
    private readonly addon: NativeAddon,
  ) {}

  /** The simulated device's counters (CATCOMFORT_BENCH_SIMULATE), or null: the real one. */
  simulatedDevice(): SimulatedDeviceStats | null {
    return this.addon.simulatedDevice();
  }

  /**
   * The pack folders of `modelsDir` (those holding a manifest.json and named as a pack id), split by
   * their manifest's `disabled`. Folders named `ID@VERSION` are versions staged for `catcomfort packs load`.
   */
  static async packIds(modelsDir: string): Promise<{ enabled: string[]; disabled: string[] }> {
    let entries: string[];
    try {
      entries = (await readdir(modelsDir, { withFileTypes: true }))
        .filter((e) => e.isDirectory() && !e.name.includes('@') && existsSync(path.join(modelsDir, e.name, 'manifest.json')))
        .map((e) => e.name)
        .sort();
    } catch (error) {
      throw new PackError(`Cannot read models folder ${modelsDir}: ${(error as Error).message}`);
    }
    const enabled: string[] = [];
    const disabled: string[] = [];
    for (const name of entries) ((await readManifest(path.join(modelsDir, name))).disabled ? disabled : enabled).push(name);
    return { enabled, disabled };
  }

  static async load(addon: NativeAddon, options: RegistryOptions): Promise<ModelRegistry> {
    const { enabled, disabled } = await ModelRegistry.packIds(options.modelsDir);
    if (enabled.length === 0) throw new PackError(`No model packs found in ${options.modelsDir}`);
    // Side by side (sessions are built on the addon's threads); if one fails, those loaded close.
    const loads = await Promise.allSettled(
      enabled.map(async (name) => {
        const dir = path.join(options.modelsDir, name);
        const manifest = await readManifest(dir);
        checkPackFolder(dir, manifest);
        return loadModel(addon, dir, options);
      }),
    );
    const failed = loads.find((l) => l.status === 'rejected');
    const loaded = loads.flatMap((l) => (l.status === 'fulfilled' ? [l.value] : []));
    if (failed) {
      await Promise.all(loaded.map((model) => model.close()));
      throw failed.reason;
    }
    return new ModelRegistry(new Map(loaded.map((model) => [model.id, new PackVersions(model)])), disabled, addon);
  }

  /** The serving version of a pack id. */
  get(id: string): Model | undefined {
    return this.packs.get(id)?.current;
  }

  /** The serving version of every pack id. */
  list(): Model[] {
    return [...this.packs.values()].map((p) => p.current);
  }

  /** The versions of a pack id, or undefined. */
  versions(id: string): PackVersions | undefined {
    return this.packs.get(id);
  }

  /** Every pack id's versions. */
  all(): PackVersions[] {
    return [...this.packs.values()];
  }

  /** A new pack id, serving at once. */
  addPack(model: Model): void {
    if (this.packs.has(model.id)) throw new VersionError(`${model.id} is already loaded`);
    this.packs.set(model.id, new PackVersions(model));
  }

  /** Removes a pack id with its versions and returns them (the caller closes them). */
  removePack(id: string): Model[] {
    const pack = this.packs.get(id);
    if (!pack) throw new VersionError(`${id} is not loaded`);
    this.packs.delete(id);
    return pack.list().map((v) => v.model);
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.all().flatMap((p) => p.list().map((v) => v.model.close())));
  }
}
