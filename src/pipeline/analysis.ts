// Turns a native item result into the outcome every interface reports (v2, v1, scans):
// the detection state from the pack's cutoffs, the cat, and the discomfort probability.
import type { ItemErrorCode, ItemResult } from '../native/addon';

export type DetectionState = 'detected' | 'low_confidence' | 'not_detected';

export interface Cutoffs {
  detected: number;
  lowConfidence: number;
}

export interface Analysis {
  width: number;
  height: number;
  detection: DetectionState;
  /** The detected cat or the best low-confidence candidate; null when not detected. */
  cat: { box: [number, number, number, number]; confidence: number } | null;
  /** Probability of discomfort; non-null only when detected. */
  score: number | null;
  timings: { decodeMs: number; detectMs: number; classifyMs: number };
}

/** Client-facing texts of image failures (spec 7.1). */
export const imageErrorMessages: Record<Exclude<ItemErrorCode, 'internal' | 'too_many_pixels'>, string> = {
  invalid_base64: 'Image is not valid base64.',
  empty_image: 'Image is empty.',
  undecodable: 'Image could not be decoded.',
  unsupported_format: 'Unsupported pixel format; send an 8-bit image.',
};

export class ImageError extends Error {
  constructor(
    readonly code: Exclude<ItemErrorCode, 'internal'>,
    message: string,
    /** The decoder's own wording (v1 reports base64 errors as Python did). */
    readonly nativeMessage: string,
  ) {
    super(message);
  }
}

export class PipelineError extends Error {}

/** Rounds to 6 decimals so labels are computed on exactly the value clients see. */
export function round6(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}

export function toAnalysis(result: ItemResult, cutoffs: Cutoffs, maxPixels: number): Analysis {
  if (!result.ok) {
    if (result.code === 'internal') throw new PipelineError(result.message);
    const message =
      result.code === 'too_many_pixels'
        ? `Image is too large; at most ${maxPixels} pixels.`
        : imageErrorMessages[result.code];
    throw new ImageError(result.code, message, result.message);
  }
  const cat = result.cat;
  const confidence = cat ? round6(cat.confidence) : 0;
  let detection: DetectionState = 'not_detected';
  if (cat && confidence >= cutoffs.detected) detection = 'detected';
  else if (cat && confidence >= cutoffs.lowConfidence) detection = 'low_confidence';
  if (detection === 'detected' && result.score === null) {
    throw new PipelineError('classifier did not run on a detected cat');
  }
  return {
    width: result.width,
    height: result.height,
    detection,
    cat: cat && detection !== 'not_detected' ? { box: cat.box, confidence } : null,
    score: detection === 'detected' ? round6(result.score!) : null,
    timings: result.timings,
  };
}
