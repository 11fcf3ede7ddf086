// POST /v2/predict and POST /v2/models/{model_id}/predict (spec 2.1, 2.2, 4.1).
import type { AnalyzeOptions, Model } from '../packs/model';
import type { ModelRegistry } from '../packs/registry';
import { analyzePicked, appliedThreshold, pickVersion, type Routed } from '../packs/routed';
import { jsonDecodeError } from '../http/json-body';
import { hasControlByte, PLACEHOLDER } from '../http/json-image';
import { ImageError, type Analysis } from '../pipeline/analysis';
import { explain } from './explain';
import type { PredictExplanation } from './explain-schema';
import { NO_OPT_IN, type PredictOptions } from './predict-options';
import { type PredictContext, type PredictFigures, predictResponse } from './predict-response';
import type { PredictResponse } from './schemas';
import { validatePredictRequest } from './validate';

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
  const { model, analysis } = await analyzeImage(registry, modelId, bytes ?? request.image, request.threshold ?? null, options, opts);
  const response = predictResponse(ctx, predictedFigures(model, analysis, request.threshold ?? null), requestId);
  return opts.explain ? { ...response, explanation: explain(model, analysis) } : response;
}

/** Analyses a predict request's image (base64: its bytes as sent, or the string) with the version of `modelId` that answers it. */
export async function analyzeImage(
  registry: ModelRegistry,
  modelId: string,
  image: Buffer | string,
  threshold: number | null,
  options: AnalyzeOptions,
  opts: PredictOptions = NO_OPT_IN,
): Promise<Routed> {
  const pick = pickVersion(registry, modelId, opts.packVersion, true);
  const item = { data: image, encoding: 'base64-strict' as const, ...(opts.explain ? { explain: true } : {}) };
  return analyzePicked(pick, item, options, threshold).catch((error: unknown) => {
    // JSON forbids raw control characters in a string: the body parsed whole said so first.
    if (Buffer.isBuffer(image) && error instanceof ImageError && error.code === 'invalid_base64' && hasControlByte(image)) throw jsonDecodeError();
    throw error;
  });
}

/** The figures of `analysis` by `model`, labelled with the threshold asked for (null: the model's default). */
export function predictedFigures(model: Model, analysis: Analysis, threshold: number | null): PredictFigures {
  const cat = analysis.cat;
  return {
    modelId: model.id,
    packVersion: model.version,
    detection: analysis.detection,
    score: analysis.score,
    threshold: appliedThreshold(model, threshold),
    cat: cat ? [cat.box[0], cat.box[1], cat.box[2], cat.box[3], cat.confidence] : null,
    width: analysis.width,
    height: analysis.height,
  };
}
