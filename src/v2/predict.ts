// POST /v2/predict and POST /v2/models/{model_id}/predict (spec 2.1, 2.2, 4.1).
import type { AnalyzeOptions, Model } from '../packs/model';
import type { ModelRegistry } from '../packs/registry';
import { analyzePicked, appliedThreshold, pickVersion } from '../packs/routed';
import { jsonDecodeError } from '../http/json-body';
import { hasControlByte, PLACEHOLDER } from '../http/json-image';
import { ImageError, isDiscomfort, type Analysis } from '../pipeline/analysis';
import { explain } from './explain';
import type { PredictExplanation } from './explain-schema';
import { NO_OPT_IN, type PredictOptions } from './predict-options';
import type { PredictResponse } from './schemas';
import { validatePredictRequest } from './validate';

export interface PredictContext {
  serviceVersion: string;
}

/** A v2 answer, with `explanation` when the request opted in. */
export type ExplainedPredictResponse = PredictResponse & { explanation?: PredictExplanation };

/**
 * Predicts with the version of pack `modelId` that answers this request (a canary takes its share),
 * or the one `opts.packVersion` names; `opts.explain` adds the explanation after the usual keys.
 */
export async function predict(
  ctx: PredictContext,
  registry: ModelRegistry,
  modelId: string,
  /** The parsed body; its `image` may be a Buffer of the base64 bytes, read without parsing them (json-image.ts). */
  body: Record<string, unknown>,
  requestId: string,
  options: AnalyzeOptions,
  opts: PredictOptions = NO_OPT_IN,
): Promise<ExplainedPredictResponse> {
  const bytes = Buffer.isBuffer(body.image) ? body.image : null;
  const request = validatePredictRequest(bytes ? { ...body, image: PLACEHOLDER } : body);
  const pick = pickVersion(registry, modelId, opts.packVersion, true);
  const item = { data: bytes ?? request.image, encoding: 'base64-strict' as const, ...(opts.explain ? { explain: true } : {}) };
  const { analysis, model } = await analyzePicked(pick, item, options, request.threshold ?? null).catch((error: unknown) => {
    // JSON forbids raw control characters in a string: the body parsed whole said so first.
    if (bytes && error instanceof ImageError && error.code === 'invalid_base64' && hasControlByte(bytes)) throw jsonDecodeError();
    throw error;
  });
  const response = toPredictResponse(ctx, model, analysis, appliedThreshold(model, request.threshold), requestId);
  return opts.explain ? { ...response, explanation: explain(model, analysis) } : response;
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
    model: { id: model.id, version: ctx.serviceVersion, pack_version: model.version },
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
