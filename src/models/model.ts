// One loaded model pack: its native pipeline behind its micro-batcher (the request path), with the
// metrics of each analysis, its session batches and host memory, and its warm-up.
import { log } from '../log';
import type { BatchingConfig } from '../config';
import { describeFailure, type AnalyzeItem, type HostMemory, type ItemResult, type NativeAddon, type NativePipeline, type SessionBatch, type SessionStage } from '../native/addon';
import { metrics } from '../ops/metrics';
import { toAnalysis, type Analysis } from '../pipeline/analysis';
import { DeadlineError, MicroBatcher, QueueFullError, type SubmitOptions } from '../pipeline/batcher';
import type { Manifest } from './manifest';
import { PackError, preprocessSpec, type Precision } from './pack';
import { chooseSizes, median, RUNS, type SizeTiming } from './session-sizes';

export class Model {
  readonly batcher: MicroBatcher<AnalyzeItem, ItemResult>;
  private timings: Record<SessionStage, SizeTiming[]> = { detector: [], classifier: [] };

  constructor(
    readonly manifest: Manifest,
    readonly dir: string,
    private readonly addon: NativeAddon,
    private readonly pipeline: NativePipeline,
    private readonly maxPixels: number,
    batching: BatchingConfig,
    /** The detector's precision (int8 or fp32). */
    readonly precision: Precision,
    /** The ImageNet backbone's precision; null when the classifier has none. */
    readonly backbonePrecision: Precision | null,
    /** Why this precision serves (precision-check.ts). */
    readonly precisionReason: string,
  ) {
    const model = manifest.id;
    const onBatch = (queuedMs: number[]) => {
      metrics.batchSize.observe({ model }, queuedMs.length);
      for (const ms of queuedMs) metrics.stageDuration.observe({ model, stage: 'queue_wait' }, ms / 1000);
    };
    this.batcher = new MicroBatcher({ ...batching, ...manifest.batching, onBatch }, (items) => addon.analyze(pipeline, items));
  }

  get id(): string {
    return this.manifest.id;
  }

  /** The pack version (its manifest's). */
  get version(): string {
    return this.manifest.version;
  }

  async analyze(item: AnalyzeItem, options: SubmitOptions = {}): Promise<Analysis> {
    let result: ItemResult;
    try {
      result = await this.batcher.submit(item, options);
    } catch (error) {
      if (error instanceof QueueFullError) metrics.rejections.inc({ model: this.id, reason: 'queue_full' });
      if (error instanceof DeadlineError) metrics.rejections.inc({ model: this.id, reason: 'deadline' });
      throw error;
    }
    if (result.ok) {
      const t = result.timings;
      metrics.stageDuration.observe({ model: this.id, stage: 'decode' }, t.decodeMs / 1000);
      metrics.stageDuration.observe({ model: this.id, stage: 'detector' }, t.detectMs / 1000);
      if (result.score !== null) metrics.stageDuration.observe({ model: this.id, stage: 'classifier' }, t.classifyMs / 1000);
      if (result.verification && !result.verification.passed) metrics.verifierVetoes.inc({ model: this.id });
    }
    return toAnalysis(result, this.maxPixels);
  }

  /** The batch sizes each session is run at, with the Runs made of each so far. */
  sessionBatches(): Record<SessionStage, SessionBatch[]> {
    return this.addon.sessionBatches(this.pipeline);
  }

  /** Where each session's tensors live: the GPU provider's pinned host memory, or plain CPU memory. */
  hostMemory(): Record<SessionStage, HostMemory> {
    return this.addon.hostMemory(this.pipeline);
  }

  /** Each stage's session batch sizes as measured at warm-up (session-sizes.ts); empty before it. */
  sizeTimings(): Record<SessionStage, SizeTiming[]> {
    return this.timings;
  }

  /**
   * Before traffic arrives: each stage's session at every batch size on `sample`'s tensor, timed
   * (session-sizes.ts), keeping only the sizes that pay; then the pipeline on `sample` at every
   * micro-batch size. `onStep` hears what is about to run (the provider probe reports it).
   */
  async warmUp(sample: Buffer, onStep: (step: string) => void = () => {}): Promise<void> {
    const batches = this.sessionBatches();
    for (const stage of ['detector', 'classifier'] as const) {
      const preprocess = preprocessSpec(stage === 'detector' ? this.manifest.detector.preprocess : this.manifest.classifier.preprocess);
      const row = (await this.addon.preprocessImage(sample, preprocess)).tensor.data;
      const timed: Array<{ batch: number; msPerImage: number }> = [];
      for (const { batch } of batches[stage]) {
        onStep(`${this.id} ${stage} at batch ${batch}`);
        const first = await this.addon.runSession(this.pipeline, stage, batch, row);
        const runs: number[] = [];
        for (let i = 0; i < RUNS; i++) runs.push(await this.addon.runSession(this.pipeline, stage, batch, row));
        log.debug('session warmed up', { model: this.id, stage, batch, first_ms: Math.round(first), median_ms: median(runs) });
        timed.push({ batch, msPerImage: median(runs) / batch });
      }
      this.timings[stage] = chooseSizes(timed);
      this.addon.keepSessionBatches(this.pipeline, stage, this.timings[stage].filter((t) => t.kept).map((t) => t.batch));
    }
    for (let size = 1; size <= this.batcher.options.maxBatchSize; size++) {
      onStep(`${this.id} pipeline on ${size} image(s)`);
      const items = Array.from({ length: size }, (): AnalyzeItem => ({ data: sample, encoding: 'bytes' }));
      const results = await this.addon.analyze(this.pipeline, items);
      const failed = results.find((r) => !r.ok);
      if (failed && !failed.ok) throw new PackError(`Warm-up of ${this.id} failed: ${describeFailure(failed)}`);
    }
  }

  async close(): Promise<void> {
    await this.batcher.close();
    this.addon.releasePipeline(this.pipeline);
  }
}
