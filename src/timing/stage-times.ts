// Where a request's time goes, stage by stage. An analysis (one image through a pack) brings its
// queue wait, the native stage times of the micro-batch it ran in (native/pipeline.cc
// StampTimings), and the event loop's share: the wait for a pool thread and for the loop to take
// the result back. A request (HTTP exchange) adds the time before its first analysis was
// submitted (body read, JSON, checks) and after its last one settled (answer built and written).
// For one image the stages add up to the request's time; a request of several images reports
// each stage's longest.

/** The stages, in the order a request meets them (the Server-Timing metric names). */
export const STAGES = ['read', 'queue', 'decode', 'detect', 'crop', 'classify', 'loop', 'convert'] as const;
export type Stage = (typeof STAGES)[number];

export const STAGE_DESCRIPTIONS: Record<Stage | 'total', string> = {
  read: 'request read and checked before its image was queued (event loop)',
  queue: 'micro-batch queue wait',
  decode: 'decode and preprocessing (image decode, resizes, detector tensor fill, output decoding)',
  detect: 'detector Runs',
  crop: 'crops: classifier input resize and fill, verifier readout',
  classify: 'crop-network Runs',
  loop: 'event loop share: waiting for a pool thread and for the loop to take the result',
  convert: 'result conversion: the answer built and written',
  total: 'the whole request, head to answer',
};

/** What the native pipeline reports per item (ItemSuccess.timings). */
export interface NativeTimings {
  decodeMs: number;
  detectMs: number;
  cropMs: number;
  classifyMs: number;
  analyzeMs: number;
}

/** One analysis's stages (milliseconds) and its two ends on performance.now()'s clock. */
export interface AnalysisTimes {
  submittedAt: number;
  settledAt: number;
  queueMs: number;
  decodeMs: number;
  detectMs: number;
  cropMs: number;
  classifyMs: number;
  loopMs: number;
}

/** The times of an analysis submitted at `submittedAt`, dispatched in a batch at `dispatchedAt`, settled at `settledAt`. */
export function analysisTimes(native: NativeTimings | null, submittedAt: number, dispatchedAt: number, settledAt: number): AnalysisTimes {
  const analyzeMs = native?.analyzeMs ?? 0;
  return {
    submittedAt,
    settledAt,
    queueMs: dispatchedAt - submittedAt,
    decodeMs: native?.decodeMs ?? 0,
    detectMs: native?.detectMs ?? 0,
    cropMs: native?.cropMs ?? 0,
    classifyMs: native?.classifyMs ?? 0,
    loopMs: Math.max(0, settledAt - dispatchedAt - analyzeMs),
  };
}

/** The analysis stages of AnalysisTimes, by name. */
export function analysisStages(t: AnalysisTimes): Partial<Record<Stage, number>> {
  return { queue: t.queueMs, decode: t.decodeMs, detect: t.detectMs, crop: t.cropMs, classify: t.classifyMs, loop: t.loopMs };
}

/** Collects the analyses of one request; reads its stages when the answer goes out. */
export class RequestTiming {
  private readonly analyses: AnalysisTimes[] = [];

  add(times: AnalysisTimes): void {
    this.analyses.push(times);
  }

  /** Every stage (ms) of a request that started at `startedAt` and is answered at `now`; only `total` when no analysis ran. */
  stages(startedAt: number, now: number): Partial<Record<Stage | 'total', number>> {
    if (this.analyses.length === 0) return { total: now - startedAt };
    const out: Partial<Record<Stage | 'total', number>> = {
      read: Math.max(0, Math.min(...this.analyses.map((a) => a.submittedAt)) - startedAt),
    };
    for (const a of this.analyses) {
      for (const [stage, ms] of Object.entries(analysisStages(a)) as Array<[Stage, number]>) out[stage] = Math.max(out[stage] ?? 0, ms);
    }
    out.convert = Math.max(0, now - Math.max(...this.analyses.map((a) => a.settledAt)));
    out.total = now - startedAt;
    return out;
  }
}

/** A `Server-Timing` header value (W3C Server Timing): `name;dur=ms` per stage, 3 decimals. */
export function serverTimingHeader(stages: Partial<Record<Stage | 'total', number>>): string {
  return Object.entries(stages)
    .map(([name, ms]) => `${name};dur=${ms.toFixed(3)}`)
    .join(', ');
}
