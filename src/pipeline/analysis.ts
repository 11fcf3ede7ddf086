// Turns a native item result into the outcome every interface reports (v2, v1, scans): the
// detection state (decided once, natively, from the pack's cutoffs), the cat, and the discomfort
// probability; failures become ImageError (client's fault) or PipelineError.
import { ApiError, CodedFailure } from '../errors';
import type { Base64Reason, CatCandidate, DetectionState, ItemErrorCode, ItemResult, Proposal, Verification } from '../native/addon';
import { analysisTimes, type AnalysisTimes } from '../timing/stage-times';

export type { DetectionState };

export interface Analysis {
  width: number;
  height: number;
  detection: DetectionState;
  /** The detected cat or the best low-confidence candidate; null when not detected. */
  cat: { box: [number, number, number, number]; confidence: number } | null;
  /** Probability of discomfort; non-null only when detected. */
  score: number | null;
  /** Where its time went (stage-times.ts). */
  timings: AnalysisTimes;
  /**
   * What the pipeline reported beyond the answer, for explained answers (v2 `explain=true`): the
   * candidate it reported (the chosen cat, else its best one, even below the cutoffs), the
   * verifier's reading of that candidate, and every candidate the detector proposed (an item
   * submitted with `explain` only; else empty).
   */
  evidence: { candidate: CatCandidate | null; verification: Verification | null; proposals: Proposal[] };
}

/** The one comfort rule of every interface: discomfort when the score is above the threshold. */
export function isDiscomfort(score: number, threshold: number): boolean {
  return score > threshold;
}

export type ImageErrorCode = Exclude<ItemErrorCode, 'internal'>;

/** v2 and scan texts of image failures (spec 7.1); v1 words base64 failures its own way (v1/respond.ts). */
export function imageErrorMessage(code: ImageErrorCode, maxPixels: number): string {
  switch (code) {
    case 'invalid_base64':
      return 'Image is not valid base64.';
    case 'empty_image':
      return 'Image is empty.';
    case 'undecodable':
      return 'Image could not be decoded.';
    case 'unsupported_format':
      return 'Unsupported pixel format; send an 8-bit image.';
    case 'too_many_pixels':
      return `Image is too large; at most ${maxPixels} pixels.`;
  }
}

/**
 * Pack `id` is not loaded (never was, or was unloaded while the request was read); with `version`,
 * that version is not loaded, or is loaded in a role that does not answer this request (`role`:
 * standby, previous, or shadow where only the serving version and a canary answer).
 */
export class PackNotLoadedError extends CodedFailure {
  constructor(
    readonly id: string,
    readonly version?: string,
    readonly role?: string,
    /** The request could name a shadow version (v2 `pack_version`). */
    readonly shadowAnswers = false,
  ) {
    super(`pack ${id}${version ? `@${version}` : ''} is not ${role ? `answering (${role})` : 'loaded'}`);
  }

  coded(): ApiError {
    if (this.version === undefined) return new ApiError('model_not_found', `Model '${this.id}' not found.`, { model_id: this.id });
    const details = { model_id: this.id, version: this.version, ...(this.role ? { role: this.role } : {}) };
    const message = this.role
      ? `Version '${this.version}' of model '${this.id}' is loaded as ${this.role}; only the serving version and a canary${this.shadowAnswers ? ' (and, named by pack_version, a shadow)' : ''} answer requests.`
      : `Version '${this.version}' of model '${this.id}' not found.`;
    return new ApiError('model_not_found', message, details);
  }
}

export class ImageError extends CodedFailure {
  constructor(
    readonly code: ImageErrorCode,
    message: string,
    /** Lenient (v1) base64 failures: which of CPython's errors, and its data character count. */
    readonly base64?: { reason: Base64Reason; dataCharacters?: number },
  ) {
    super(message);
  }

  coded(): ApiError {
    return new ApiError('invalid_image', this.message);
  }
}

export class PipelineError extends Error {}

/** `timings`: as the batcher saw it (Model.analyze); by default the native stages alone (tools run the addon directly). */
export function toAnalysis(result: ItemResult, maxPixels: number, timings?: AnalysisTimes): Analysis {
  if (!result.ok) {
    if (result.code === 'internal') throw new PipelineError(result.internal ?? 'internal failure');
    const base64 = result.reason ? { reason: result.reason, ...(result.dataCharacters !== undefined ? { dataCharacters: result.dataCharacters } : {}) } : undefined;
    throw new ImageError(result.code, imageErrorMessage(result.code, maxPixels), base64);
  }
  const { cat, detection } = result;
  return {
    width: result.width,
    height: result.height,
    detection,
    cat: cat && detection !== 'not_detected' ? { box: cat.box, confidence: cat.confidence } : null,
    score: detection === 'detected' ? result.score : null,
    timings: timings ?? analysisTimes(result.timings, 0, 0, result.timings.analyzeMs),
    evidence: { candidate: cat, verification: result.verification ?? null, proposals: result.proposals ?? [] },
  };
}
