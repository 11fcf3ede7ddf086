// POST /v2/predict and POST /v2/models/{model_id}/predict (spec 2.1, 2.2, 4.1).
import type { Model } from '../models/model';
import { isDiscomfort, type Analysis } from '../pipeline/analysis';
import type { SubmitOptions } from '../pipeline/batcher';
import type { PredictResponse } from './schemas';
import { validatePredictRequest } from './validate';

export interface PredictContext {
  serviceVersion: string;
}

export async function predict(
  ctx: PredictContext,
  model: Model,
  body: Record<string, unknown>,
  requestId: string,
  options: SubmitOptions,
): Promise<PredictResponse> {
  const request = validatePredictRequest(body);
  const threshold = request.threshold ?? model.manifest.defaultThreshold;
  const analysis = await model.analyze({ data: request.image, encoding: 'base64-strict' }, options);
  return toPredictResponse(ctx, model, analysis, threshold, requestId);
}

export function toPredictResponse(
  ctx: PredictContext,
  model: Model,
  analysis: Analysis,
  threshold: number,
  requestId: string,
): PredictResponse {
  const cat = analysis.cat;
  return {
    request_id: requestId,
    model: { id: model.id, version: ctx.serviceVersion },
    detection: analysis.detection,
    prediction:
      analysis.score === null
        ? null
        : { label: isDiscomfort(analysis.score, threshold) ? 'discomfort' : 'comfort', score: analysis.score, threshold },
    cat: cat
      ? {
          bounding_box: { x_min: cat.box[0], y_min: cat.box[1], x_max: cat.box[2], y_max: cat.box[3] },
          detection_confidence: cat.confidence,
        }
      : null,
    image: { width: analysis.width, height: analysis.height },
  };
}
