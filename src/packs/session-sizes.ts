// Which session batch sizes pay, measured at warm-up: each size's session runs on real input (the
// warm-up photo's tensor in every row) once, then RUNS more times; its cost is the median Run time
// per image. A size is kept only when that cost is at most KEEP_RATIO of the best smaller size
// kept and of the size just below it: a bigger batch must save a tenth per image over its
// neighbour to be worth its padding (a device whose cost grows with the batch, where a size pays a
// little over a much smaller one, loses that to padding: docs/gpu.md "A simulated device"). The
// smallest size always stays. On CPU a batched Run costs about as much per image as single ones, so batch 1 is
// what stays; on a GPU the sizes that use it better stay.

/** Runs timed per size after its first. */
export const RUNS = 5;
export const KEEP_RATIO = 0.9;

export interface SizeTiming {
  batch: number;
  /** Median Run time per image, milliseconds. */
  msPerImage: number;
  kept: boolean;
}

/** The table of `timings` (ascending sizes) with the sizes that pay marked kept. */
export function chooseSizes(timings: ReadonlyArray<{ batch: number; msPerImage: number }>): SizeTiming[] {
  let best = Infinity;
  return timings.map(({ batch, msPerImage }, i) => {
    const kept = i === 0 || (msPerImage <= best * KEEP_RATIO && msPerImage <= timings[i - 1]!.msPerImage * KEEP_RATIO);
    if (kept) best = Math.min(best, msPerImage);
    return { batch, msPerImage: Number(msPerImage.toFixed(3)), kept };
  });
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
