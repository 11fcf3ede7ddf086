// One loaded model pack: its native pipeline behind its micro-batcher (the request path), with the
// metrics of each analysis, its session batches and host memory, and its warm-up.
import { log } from '../log';
import type { DeviceProfile } from '../native/device-profile';
import type { BatchingConfig } from '../pipeline/batcher';
import { describeFailure, type AnalyzeItem, type BenchAddon, type HostMemory, type ItemResult, type LowLoadSessions, type NativeAddon, type NativePipeline, type SessionBatch, type SessionStage } from '../native/addon';
import { metrics } from '../ops/metrics';
import { observeStages } from '../ops/stage-summary';
import { toAnalysis, type Analysis } from '../pipeline/analysis';
import { holdLentBytes } from '../memory/lent-bytes';
import { DeadlineError, MicroBatcher, QueueFullError, type SubmitOptions } from '../pipeline/batcher';
import { analysisStages, analysisTimes, type RequestTiming } from '../timing/stage-times';
import { kneeBatchSize } from './batching-plan';
import type { Manifest } from './manifest';
import { PackError, preprocessSpec, type Precision } from './pack';
import { chooseSizes, median, RUNS, type SizeTiming } from './session-sizes';

const SESSION_STAGES = ['detector', 'classifier'] as const;

/** CATCOMFORT_BENCH_SIMULATE (and _DECODE): the device profile, and whether decoding is simulated too. */
export interface SimulatedDevice {
  profile: DeviceProfile;
  decode: boolean;
}

/**
 * Benchmarks and tests: `pipeline`'s Runs simulated on `device` from now on, after one real
 * analysis of `sample` recorded what they answer (BenchAddon.simulate).
 */
export async function simulatePipeline(addon: NativeAddon, pipeline: NativePipeline, device: SimulatedDevice, sample: Buffer): Promise<void> {
  if (!('simulate' in addon)) throw new PackError('CATCOMFORT_BENCH_SIMULATE needs the bench binding (build/Release/catcomfort_bench.node)');
  (addon as BenchAddon).simulate(pipeline, device.profile, device.decode);
  const [recorded] = await addon.analyze(pipeline, [{ data: sample, encoding: 'bytes' }]);
  if (!recorded?.ok) throw new PackError(`the simulated device could not record the warm-up photo's outputs: ${recorded ? describeFailure(recorded) : 'no result'}`);
}

/** The warm-up photo's input tensor for each stage. */
export type WarmUpRows = Record<SessionStage, Float32Array>;

/** When a native result's batch was dispatched and when the result came back to the event loop. */
const batchTimes = new WeakMap<ItemResult, { dispatchedAt: number; settledAt: number }>();

export interface AnalyzeOptions extends SubmitOptions {
  /** Hears the analysis's stage times (the request's Server-Timing). */
  timing?: RequestTiming;
}

export class Model {
  readonly batcher: MicroBatcher<AnalyzeItem, ItemResult>;
  private timings: Record<SessionStage, SizeTiming[]> = { detector: [], classifier: [] };
  /** With `free`: the warm-up photo's result, answered to every analysis once warm-up has run. */
  private freeResult: ItemResult | null = null;

  constructor(
    readonly manifest: Manifest,
    readonly dir: string,
    private readonly addon: NativeAddon,
    private readonly pipeline: NativePipeline,
    private readonly maxPixels: number,
    /** The batching planned (batching-plan.ts): its figures, whether warm-up fits the batch size to the sessions, and why. */
    private readonly batching: { config: BatchingConfig; fitToSessions: boolean; chosenBy: string },
    /** The detector's precision (int8 or fp32). */
    readonly precision: Precision,
    /** The ImageNet backbone's precision; null when the classifier has none. */
    readonly backbonePrecision: Precision | null,
    /** Why this precision serves (precision-check.ts). */
    readonly precisionReason: string,
    /** The low-load sessions its pipeline was made with (runtime.ts lowLoadFor). */
    readonly lowLoad: LowLoadSessions,
    /** CATCOMFORT_BENCH_FREE_MODEL: after warm-up the networks are not run (freeResult). */
    private readonly free = false,
    /** CATCOMFORT_BENCH_SIMULATE: from warm-up on, session Runs are simulated on this device (simulateDevice). */
    private readonly simulate: SimulatedDevice | null = null,
  ) {
    const model = manifest.id;
    const onBatch = (queuedMs: number[]) => metrics.batchSize.observe({ model }, queuedMs.length);
    const run = async (items: AnalyzeItem[]): Promise<ItemResult[]> => {
      const dispatchedAt = performance.now();
      const free = this.freeResult;
      const results = free ? items.map(() => ({ ...free })) : await addon.analyze(pipeline, items);
      const settledAt = performance.now();
      for (const result of results) batchTimes.set(result, { dispatchedAt, settledAt });
      return results;
    };
    this.batcher = new MicroBatcher({ ...batching.config, ...manifest.batching, onBatch }, run);
  }

  get id(): string {
    return this.manifest.id;
  }

  /** The pack version (its manifest's). */
  get version(): string {
    return this.manifest.version;
  }

  async analyze(item: AnalyzeItem, options: AnalyzeOptions = {}): Promise<Analysis> {
    const submittedAt = performance.now();
    // Lent bytes (a direct body) stay where they are until the addon has read them.
    const letGo = holdLentBytes(item.data);
    let result: ItemResult;
    try {
      result = await this.batcher.submit(item, options);
    } catch (error) {
      if (error instanceof QueueFullError) metrics.rejections.inc({ model: this.id, reason: 'queue_full' });
      if (error instanceof DeadlineError) metrics.rejections.inc({ model: this.id, reason: 'deadline' });
      throw error;
    } finally {
      letGo?.();
    }
    const { dispatchedAt, settledAt } = batchTimes.get(result) ?? { dispatchedAt: submittedAt, settledAt: submittedAt };
    const times = analysisTimes(result.ok ? result.timings : null, submittedAt, dispatchedAt, settledAt);
    options.timing?.add(times);
    observeStages(this.id, analysisStages(times));
    if (result.ok && result.verification && !result.verification.passed) metrics.verifierVetoes.inc({ model: this.id });
    return toAnalysis(result, this.maxPixels, times);
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
   * Before traffic arrives, in three steps (warmUpAll runs the first and last of every model side
   * by side, the timing one model at a time): firstRuns, timeSizes and warmPipeline; with a
   * simulated device, simulateDevice first.
   * `onStep` hears what is about to run (the provider probe reports it).
   */
  async warmUp(sample: Buffer, onStep: (step: string) => void = () => {}): Promise<void> {
    const rows = await this.warmUpRows(sample);
    await this.simulateDevice(sample);
    await this.firstRuns(rows, onStep);
    await this.timeSizes(rows, onStep);
    await this.warmPipeline(sample, onStep);
  }

  /** `sample`'s input tensor for each stage (what the warm-up Runs take). */
  async warmUpRows(sample: Buffer): Promise<WarmUpRows> {
    const row = async (stage: SessionStage) => {
      const spec = stage === 'detector' ? this.manifest.detector.preprocess : this.manifest.classifier.preprocess;
      return (await this.addon.preprocessImage(sample, preprocessSpec(spec))).tensor.data;
    };
    return { detector: await row('detector'), classifier: await row('classifier') };
  }

  /**
   * The first Run of each stage's session at every batch size on `rows`, all started at once: the
   * Runs that build plans (seconds each on a GPU).
   */
  async firstRuns(rows: WarmUpRows, onStep: (step: string) => void = () => {}): Promise<void> {
    const batches = this.sessionBatches();
    onStep(`${this.id} first Run at every session batch size`);
    await Promise.all(
      SESSION_STAGES.flatMap((stage) => batches[stage].map(({ batch }) => this.addon.runSession(this.pipeline, stage, batch, rows[stage]))),
    );
  }

  /**
   * With a simulated device (benchmarks and tests): one real analysis of `sample` records each
   * stage's outputs, and every session Run after it is simulated (BenchAddon.simulate), the first
   * Runs and the timing of the session sizes included, so warm-up fits the batching to the
   * device's profile.
   */
  async simulateDevice(sample: Buffer): Promise<void> {
    if (this.simulate) await simulatePipeline(this.addon, this.pipeline, this.simulate, sample);
  }

  /**
   * Each stage's session at every batch size timed on `rows` (session-sizes.ts), one Run at a time,
   * keeping only the sizes that pay.
   */
  async timeSizes(rows: WarmUpRows, onStep: (step: string) => void = () => {}): Promise<void> {
    const batches = this.sessionBatches();
    for (const stage of SESSION_STAGES) {
      const timed: Array<{ batch: number; msPerImage: number }> = [];
      for (const { batch } of batches[stage]) {
        onStep(`${this.id} ${stage} at batch ${batch}`);
        const runs: number[] = [];
        for (let i = 0; i < RUNS; i++) runs.push(await this.addon.runSession(this.pipeline, stage, batch, rows[stage]));
        log.debug('session timed', { model: this.id, stage, batch, median_ms: median(runs) });
        timed.push({ batch, msPerImage: median(runs) / batch });
      }
      this.timings[stage] = chooseSizes(timed);
      this.addon.keepSessionBatches(this.pipeline, stage, this.timings[stage].filter((t) => t.kept).map((t) => t.batch));
    }
    if (this.batching.fitToSessions && this.manifest.batching?.maxBatchSize === undefined) {
      this.batcher.setMaxBatchSize(kneeBatchSize(this.timings.detector, this.manifest.detector.views.length, this.batcher.options.maxBatchSize));
    }
  }

  /** The batching in effect and how it was chosen (/v2/stats, the start log). */
  batchingInEffect(): { maxBatchSize: number; maxQueueDelayUs: number; maxQueue: number; maxInFlight: number; chosenBy: string } {
    const { maxBatchSize, maxQueueDelayUs, maxQueue, maxInFlight } = this.batcher.options;
    const fromManifest = this.manifest.batching !== undefined && Object.keys(this.manifest.batching).length > 0;
    return { maxBatchSize, maxQueueDelayUs, maxQueue, maxInFlight, chosenBy: fromManifest ? `${this.batching.chosenBy}; manifest overrides` : this.batching.chosenBy };
  }

  /** The whole pipeline on `sample` at every micro-batch size. */
  async warmPipeline(sample: Buffer, onStep: (step: string) => void = () => {}): Promise<void> {
    for (let size = 1; size <= this.batcher.options.maxBatchSize; size++) {
      onStep(`${this.id} pipeline on ${size} image(s)`);
      const items = Array.from({ length: size }, (): AnalyzeItem => ({ data: sample, encoding: 'bytes' }));
      const results = await this.addon.analyze(this.pipeline, items);
      const failed = results.find((r) => !r.ok);
      if (failed && !failed.ok) throw new PackError(`Warm-up of ${this.id} failed: ${describeFailure(failed)}`);
      if (this.free) this.freeResult = results[0]!;
    }
  }

  async close(): Promise<void> {
    await this.batcher.close();
    this.addon.releasePipeline(this.pipeline);
  }
}
