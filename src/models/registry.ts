// The loaded model packs, each with its native pipeline and its micro-batcher, by id.
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { BatchingConfig } from '../config';
import type { AnalyzeItem, ItemResult, NativeAddon, NativePipeline } from '../native/addon';
import { toAnalysis, type Analysis } from '../pipeline/analysis';
import { MicroBatcher, type SubmitOptions } from '../pipeline/batcher';
import type { Manifest } from './manifest';
import { loadPack, PackError, readManifest } from './pack';

export class Model {
  readonly batcher: MicroBatcher<AnalyzeItem, ItemResult>;

  constructor(
    readonly manifest: Manifest,
    readonly dir: string,
    private readonly addon: NativeAddon,
    private readonly pipeline: NativePipeline,
    private readonly maxPixels: number,
    batching: BatchingConfig,
  ) {
    this.batcher = new MicroBatcher({ ...batching, ...manifest.batching }, (items) => addon.analyze(pipeline, items));
  }

  get id(): string {
    return this.manifest.id;
  }

  async analyze(item: AnalyzeItem, options: SubmitOptions = {}): Promise<Analysis> {
    const result = await this.batcher.submit(item, options);
    return toAnalysis(result, this.manifest.cutoffs, this.maxPixels);
  }

  /** Runs the pipeline once at every batch size up to the maximum, before traffic arrives. */
  async warmUp(sample: Buffer): Promise<void> {
    for (let size = 1; size <= this.batcher.options.maxBatchSize; size++) {
      const items = Array.from({ length: size }, (): AnalyzeItem => ({ data: sample, encoding: 'bytes' }));
      const results = await this.addon.analyze(this.pipeline, items);
      const failed = results.find((r) => !r.ok);
      if (failed && !failed.ok) throw new PackError(`Warm-up of ${this.id} failed: ${failed.message}`);
    }
  }

  async close(): Promise<void> {
    await this.batcher.close();
    this.addon.releasePipeline(this.pipeline);
  }
}

export interface RegistryOptions {
  modelsDir: string;
  maxPixels: number;
  batching: BatchingConfig;
  sessionBatch: number | null;
  /** PackLimits.jpegShrinkOnLoad (default true). */
  jpegShrinkOnLoad?: boolean;
}

export class ModelRegistry {
  private constructor(
    private readonly models: Map<string, Model>,
    /** Ids of the packs whose manifest says "disabled": validated, not loaded. */
    readonly disabled: string[],
  ) {}

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
    const disabled: string[] = [];
    for (const name of entries) {
      const dir = path.join(options.modelsDir, name);
      if ((await readManifest(dir)).disabled) {
        disabled.push(name);
        continue;
      }
      const pack = await loadPack(dir, options);
      if (pack.manifest.id !== name) {
        throw new PackError(`Model pack folder ${dir} holds manifest id "${pack.manifest.id}"; they must match`);
      }
      const pipeline = await addon.createPipeline(pack.spec);
      models.set(name, new Model(pack.manifest, dir, addon, pipeline, options.maxPixels, options.batching));
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
