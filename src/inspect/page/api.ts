// The page's two requests to this origin: the model list (GET /v2/models) and a prediction with the
// explanation (POST /v2/models/{id}/predict?explain=true), each with the key from this tab. The
// photo's original bytes are sent; refusals come back as Refusal, never thrown.
import type { Answer, ErrorBody, ModelList } from './answer.js';
import { refusalOf, type Refusal } from './messages.js';
import { parseServerTiming, type StageTiming } from './server-timing.js';

/** Which model (null: the service's default, /v2/predict) and version answers, and the threshold (null: the model's default). */
export interface Target {
  model: string | null;
  packVersion: string | null;
  threshold: number | null;
}

export type Result<T> = { ok: true; value: T; timings: StageTiming[] } | { ok: false; refusal: Refusal };

async function call<T>(url: string, init: RequestInit, fileBytes = 0): Promise<Result<T>> {
  let res: Response;
  try {
    res = await fetch(url, { ...init, cache: 'no-store', credentials: 'omit' });
  } catch {
    return { ok: false, refusal: refusalOf(0, null, null, fileBytes) };
  }
  const body = (await res.json().catch(() => null)) as unknown;
  if (!res.ok) return { ok: false, refusal: refusalOf(res.status, body as ErrorBody | null, res.headers.get('retry-after'), fileBytes) };
  return { ok: true, value: body as T, timings: parseServerTiming(res.headers.get('server-timing')) };
}

export function listModels(key: string): Promise<Result<ModelList>> {
  return call<ModelList>('/v2/models', { headers: { 'api-key': key } });
}

export function predict(key: string, image: string, fileBytes: number, target: Target): Promise<Result<Answer>> {
  const query = new URLSearchParams({ explain: 'true' });
  if (target.packVersion !== null) query.set('pack_version', target.packVersion);
  const body = target.threshold === null ? { image } : { image, threshold: target.threshold };
  return call<Answer>(
    `${target.model === null ? '/v2' : `/v2/models/${encodeURIComponent(target.model)}`}/predict?${query}`,
    { method: 'POST', headers: { 'api-key': key, 'content-type': 'application/json' }, body: JSON.stringify(body) },
    fileBytes,
  );
}
