// The batching the service runs when its settings leave it to the service (unset = auto): images
// per micro-batch, batches in flight and the queue. One rule, from the provider
// and the core count, then fitted at warm-up to the session sizes that paid:
// - CPU: 4 x 2 in flight, queue 64, as measured on 2 cores (docs/performance.md "Performance"): a batched Run
//   costs the same per image there, so larger batches only add waiting.
// - GPU: a Run of 8 costs what a Run of 1 costs (H200, ../shared/gpu/README.md), so the device
//   fills only with many images in flight: up to GPU_BATCH per batch (32: on the simulated h200
//   with 16 cores played, 16 reached 83-88 % of the sweep's best, 32 the best; docs/gpu.md), a batch in flight per
//   CORES_PER_BATCH cores (decode and preprocessing of one overlap the Runs of the others), and a
//   queue of QUEUE_BATCHES pipelines. After warm-up the batch shrinks to the knee, the largest
//   session size that still saved a tenth per image (session-sizes.ts), never under CPU_BATCH.
import type { BatchingSettings } from '../config';
import type { BatchingConfig } from '../pipeline/batcher';
import type { SizeTiming } from './session-sizes';

export const CPU_BATCH = 4;
export const CPU_IN_FLIGHT = 2;
export const CPU_QUEUE = 64;
export const GPU_BATCH = 32;
export const CORES_PER_BATCH = 4;
export const MAX_GPU_IN_FLIGHT = 8;
export const QUEUE_BATCHES = 4;

export interface BatchingPlan {
  batching: BatchingConfig;
  /** Whether warm-up may shrink maxBatchSize to the knee of the session sizes (GPU, batch size auto). */
  fitToSessions: boolean;
  /** How the figures were chosen, for the start log and /v2/stats. */
  chosenBy: string;
}

/** The plan for `settings` with or without a GPU provider active, on `cores` cores. */
export function planBatching(set: BatchingSettings, gpu: boolean, cores: number): BatchingPlan {
  const auto = gpu
    ? { maxBatchSize: GPU_BATCH, maxInFlight: Math.min(MAX_GPU_IN_FLIGHT, Math.max(CPU_IN_FLIGHT, Math.round(cores / CORES_PER_BATCH))) }
    : { maxBatchSize: CPU_BATCH, maxInFlight: CPU_IN_FLIGHT };
  const maxBatchSize = set.maxBatchSize ?? auto.maxBatchSize;
  const maxInFlight = set.maxInFlight ?? auto.maxInFlight;
  const maxQueue = set.maxQueue ?? (gpu ? Math.max(CPU_QUEUE, QUEUE_BATCHES * maxBatchSize * maxInFlight) : CPU_QUEUE);
  const left = [set.maxBatchSize, set.maxInFlight, set.maxQueue].some((v) => v === null);
  return {
    batching: { maxBatchSize, maxQueueDelayUs: set.maxQueueDelayUs, maxQueue, maxInFlight },
    fitToSessions: gpu && set.maxBatchSize === null,
    chosenBy: !left ? 'settings' : gpu ? `gpu rule (${cores} cores)` : 'cpu rule',
  };
}

/**
 * The knee of the detector's session sizes as timed at warm-up: the largest kept size in images
 * (a Run holds `views` rows per image), between CPU_BATCH and `planned`.
 */
export function kneeBatchSize(detector: readonly SizeTiming[], views: number, planned: number): number {
  const kept = detector.filter((t) => t.kept).map((t) => t.batch);
  if (kept.length === 0) return planned;
  return Math.min(planned, Math.max(CPU_BATCH, Math.floor(Math.max(...kept) / Math.max(1, views))));
}
