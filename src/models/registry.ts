// The loaded model packs, each with its native pipeline and its micro-batcher, by id.
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { BatchingConfig } from '../config';
import { log } from '../log';
import type { AnalyzeItem, ItemResult, NativeAddon, NativePipeline, SessionBatch, SessionStage } from '../native/addon';
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

  /** The batch sizes each session is run at, with the Runs made of each so far. */
  sessionBatches(): Record<SessionStage, SessionBatch[]> {
    return this.addon.sessionBatches(this.pipeline);
  }

  /**
   * Before traffic arrives: each session once at every batch size it is run at (so no request
   * meets a new shape; on a GPU the first Run of a shape is slow), then the pipeline on `sample`
   * at every micro-batch size. `onStep` hears what is about to run (the provider probe reports it).
   */
  async warmUp(sample: Buffer, onStep: (step: string) => void = () => {}): Promise<void> {
    const batches = this.sessionBatches();
    for (const stage of ['detector', 'classifier'] as const) {
      for (const { batch } of batches[stage]) {
        onStep(`${this.id} ${stage} at batch ${batch}`);
        const ms = await this.addon.benchSession(this.pipeline, stage, batch);
        log.debug('session warmed up', { model: this.id, stage, batch, ms: Math.round(ms) });
      }
    }
    for (let size = 1; size <= this.batcher.options.maxBatchSize; size++) {
      onStep(`${this.id} pipeline on ${size} image(s)`);
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
