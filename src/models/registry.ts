// The loaded model packs, each with its native pipeline, by id.
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { AnalyzeItem, NativeAddon, NativePipeline } from '../native/addon';
import { toAnalysis, type Analysis } from '../pipeline/analysis';
import type { Manifest } from './manifest';
import { loadPack, PackError } from './pack';

export class Model {
  constructor(
    readonly manifest: Manifest,
    readonly dir: string,
    private readonly addon: NativeAddon,
    private readonly pipeline: NativePipeline,
    private readonly maxPixels: number,
  ) {}

  get id(): string {
    return this.manifest.id;
  }

  async analyze(item: AnalyzeItem): Promise<Analysis> {
    const [result] = await this.addon.analyze(this.pipeline, [item]);
    return toAnalysis(result!, this.manifest.cutoffs, this.maxPixels);
  }

  release(): void {
    this.addon.releasePipeline(this.pipeline);
  }
}

export interface RegistryOptions {
  modelsDir: string;
  maxPixels: number;
  maxSessionBatch: number;
}

export class ModelRegistry {
  private constructor(private readonly models: Map<string, Model>) {}

  static async load(addon: NativeAddon, options: RegistryOptions): Promise<ModelRegistry> {
    let entries: string[];
    try {
      entries = (await readdir(options.modelsDir, { withFileTypes: true }))
        .filter((e) => e.isDirectory() && existsSync(path.join(options.modelsDir, e.name, 'manifest.json')))
        .map((e) => e.name)
        .sort();
    } catch (error) {
      throw new PackError(`Cannot read models folder ${options.modelsDir}: ${(error as Error).message}`);
    }
    const models = new Map<string, Model>();
    for (const name of entries) {
      const dir = path.join(options.modelsDir, name);
      const pack = await loadPack(dir, options);
      if (pack.manifest.id !== name) {
        throw new PackError(`Model pack folder ${dir} holds manifest id "${pack.manifest.id}"; they must match`);
      }
      const pipeline = await addon.createPipeline(pack.spec);
      models.set(name, new Model(pack.manifest, dir, addon, pipeline, options.maxPixels));
    }
    if (models.size === 0) throw new PackError(`No model packs found in ${options.modelsDir}`);
    return new ModelRegistry(models);
  }

  get(id: string): Model | undefined {
    return this.models.get(id);
  }

  list(): Model[] {
    return [...this.models.values()];
  }

  releaseAll(): void {
    for (const model of this.models.values()) model.release();
  }
}
