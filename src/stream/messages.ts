// What a live stream's messages hold (docs/api-v2.md "Live stream"): the client's settings, a JSON
// text message, read and checked here; the service's answers and errors, written here as JSON text.
import { ApiError, validationError, type FieldError } from '../errors';
import { THRESHOLD_RANGE } from '../v2/schemas';

/** What a settings message may set; each member kept until another settings message changes it. */
export interface StreamSettings {
  /** The pack that analyses the frames (default: CATCOMFORT_DEFAULT_MODEL). */
  model: string;
  /** A version of it by name (serving, canary or shadow), as `?pack_version=` on /v2/predict. */
  packVersion: string | undefined;
  threshold: number | null;
  explain: boolean;
}

const MEMBERS = new Set(['api_key', 'model', 'pack_version', 'threshold', 'explain']);
/** pack_version null: back to the version /v2/predict would draw. */
const TEXT_MAX = 256;

/** A settings message read: the key it carried (if any) and the settings it leaves; throws invalid_request. */
export function readSettings(text: string, current: StreamSettings): { apiKey: string | undefined; settings: StreamSettings } {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ApiError('invalid_request', 'A text message must be a JSON object of settings.');
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ApiError('invalid_request', 'A text message must be a JSON object of settings.');
  const m = body as Record<string, unknown>;
  const errors: FieldError[] = [];
  for (const name of Object.keys(m)) if (!MEMBERS.has(name)) errors.push({ field: name, message: 'Unknown setting.' });
  const text_ = (name: string): string | undefined => {
    const v = m[name];
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || v.length === 0 || v.length > TEXT_MAX) errors.push({ field: name, message: `A string of 1 to ${TEXT_MAX} characters.` });
    return typeof v === 'string' ? v : undefined;
  };
  const apiKey = text_('api_key');
  const model = text_('model');
  const packVersion = m.pack_version === null ? undefined : text_('pack_version');
  const threshold = m.threshold;
  if (threshold !== undefined && threshold !== null && (typeof threshold !== 'number' || !(threshold >= THRESHOLD_RANGE.minimum && threshold <= THRESHOLD_RANGE.maximum))) {
    errors.push({ field: 'threshold', message: `A number from ${THRESHOLD_RANGE.minimum} to ${THRESHOLD_RANGE.maximum}, or null.` });
  }
  if (m.explain !== undefined && typeof m.explain !== 'boolean') errors.push({ field: 'explain', message: 'true or false.' });
  if (errors.length > 0) throw validationError(errors);
  return {
    apiKey,
    settings: {
      model: model ?? current.model,
      packVersion: 'pack_version' in m ? packVersion : current.packVersion,
      threshold: threshold === undefined ? current.threshold : (threshold as number | null),
      explain: typeof m.explain === 'boolean' ? m.explain : current.explain,
    },
  };
}

/** An error as a stream message: the v2 error body with the frame it is about and the frames skipped since the last answer (null, null: a settings message). */
export function errorMessage(requestId: string, seq: number | null, skipped: number | null, error: ApiError): string {
  return JSON.stringify({ type: 'error', seq, skipped, request_id: requestId, error: { code: error.code, message: error.message, details: error.details } });
}

/**
 * An analysed frame: what /v2/predict answers, with its sequence number, the frames skipped since the
 * last answer, how long it waited at the service before its analysis began, and the stage times (ms).
 */
export function resultMessage(seq: number, skipped: number, waitedMs: number, answer: object, timings: Record<string, number>): string {
  const ms: Record<string, number> = {};
  for (const stage in timings) ms[stage] = Math.round(timings[stage]! * 1000) / 1000;
  return JSON.stringify({ type: 'result', seq, skipped, waited_ms: Math.round(waitedMs * 1000) / 1000, ...answer, timings: ms });
}
