// The loaded model packs by id: which pack folders there are, loading each (src/models/pack.ts)
// into its native pipeline and Model (src/models/model.ts), and closing them all.
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { BatchingConfig } from '../config';
import type { NativeAddon } from '../native/addon';
import { Model } from './model';
import { loadPack, PackError, readManifest, type Precision } from './pack';

export interface RegistryOptions {
  modelsDir: string;
  maxPixels: number;
  batching: BatchingConfig;
  sessionBatch: number | null;
  /** The detector precision wanted (PackLimits.precision). */
  precision: Precision;
  /** PackLimits.jpegShrinkOnLoad (default true). */
  jpegShrinkOnLoad?: boolean;
}

export class ModelRegistry {
  private constructor(
    private readonly models: Map<string, Model>,
    /** Ids of the packs whose manifest says "disabled": validated, not loaded. */
    readonly disabled: string[],
  ) {}

  /** The pack folders of `modelsDir` (those holding a manifest.json), split by their manifest's `disabled`. */
  static async packIds(modelsDir: string): Promise<{ enabled: string[]; disabled: string[] }> {
    let entries: string[];
    try {
      entries = (await readdir(modelsDir, { withFileTypes: true }))
        .filter((e) => e.isDirectory() && existsSync(path.join(modelsDir, e.name, 'manifest.json')))
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
    const models = new Map<string, Model>();
    for (const name of enabled) {
      const dir = path.join(options.modelsDir, name);
      const pack = await loadPack(dir, options);
      if (pack.manifest.id !== name) {
        throw new PackError(`Model pack folder ${dir} holds manifest id "${pack.manifest.id}"; they must match`);
      }
      const pipeline = await addon.createPipeline(pack.spec);
      models.set(name, new Model(pack.manifest, dir, addon, pipeline, options.maxPixels, options.batching, pack.precision, pack.backbonePrecision));
    }
    if (models.size === 0) throw new PackError(`No model packs found in ${options.modelsDir}`);
    return new ModelRegistry(models, disabled);
  }

  get(id: string): Model | undefined {
    return this.models.get(id);
  }

  list(): Model[] {
    return [...this.models.values()];
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.models.values()].map((m) => m.close()));
  }
}
