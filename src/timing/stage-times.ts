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
    const out = { read: 0, queue: 0, decode: 0, detect: 0, crop: 0, classify: 0, loop: 0, convert: 0, total: now - startedAt };
    let first = Infinity;
    let last = -Infinity;
    for (const a of this.analyses) {
      first = Math.min(first, a.submittedAt);
      last = Math.max(last, a.settledAt);
      out.queue = Math.max(out.queue, a.queueMs);
      out.decode = Math.max(out.decode, a.decodeMs);
      out.detect = Math.max(out.detect, a.detectMs);
      out.crop = Math.max(out.crop, a.cropMs);
      out.classify = Math.max(out.classify, a.classifyMs);
      out.loop = Math.max(out.loop, a.loopMs);
    }
    out.read = Math.max(0, first - startedAt);
    out.convert = Math.max(0, now - last);
    return out;
  }
}

/** A `Server-Timing` header value (W3C Server Timing): `name;dur=ms` per stage, 3 decimals. */
export function serverTimingHeader(stages: Partial<Record<Stage | 'total', number>>): string {
  let value = '';
  for (const name in stages) value += `${value === '' ? '' : ', '}${name};dur=${threeDecimals(stages[name as Stage | 'total']!)}`;
  return value;
}

/** `ms` (not negative) to the nearest microsecond with 3 decimals, as toFixed(3) but for halves, at less than half its cost (9 per answer). */
function threeDecimals(ms: number): string {
  const us = Math.round(ms * 1000);
  const frac = us % 1000;
  return `${(us - frac) / 1000}.${frac < 10 ? '00' : frac < 100 ? '0' : ''}${frac}`;
}
