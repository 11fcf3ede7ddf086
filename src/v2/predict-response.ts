// A predict answer's body from the figures of its analysis: one rule for the route (predict.ts) and
// the command line.
import { isDiscomfort, type Analysis } from '../pipeline/analysis';
import type { PredictResponse } from './schemas';

export interface PredictContext {
  serviceVersion: string;
}

/** What a predict answer says of its analysis. */
export interface PredictFigures {
  modelId: string;
  packVersion: string;
  detection: Analysis['detection'];
  score: number | null;
  threshold: number;
  /** x_min, y_min, x_max, y_max and the detection confidence; null: no cat. */
  cat: [number, number, number, number, number] | null;
  width: number;
  height: number;
}

export function predictResponse(ctx: PredictContext, f: PredictFigures, requestId: string): PredictResponse {
  const cat = f.cat;
  return {
    request_id: requestId,
    model: { id: f.modelId, version: ctx.serviceVersion, pack_version: f.packVersion },
    detection: f.detection,
    prediction: f.score === null ? null : { label: isDiscomfort(f.score, f.threshold) ? 'discomfort' : 'comfort', score: f.score, threshold: f.threshold },
    cat: cat ? { bounding_box: { x_min: cat[0], y_min: cat[1], x_max: cat[2], y_max: cat[3] }, detection_confidence: cat[4] } : null,
    image: { width: f.width, height: f.height },
  };
}
