// v1 request validation reproducing the old FastAPI/pydantic v2 app: the same rules and
// the same 422 `detail` entries (type, loc, msg, input, ctx), query errors before body errors.
import { locateJsonError } from './json-error';

export interface V1Detail {
  type: string;
  loc: Array<string | number>;
  msg: string;
  input: unknown;
  ctx?: Record<string, unknown>;
}

export class V1ValidationError extends Error {
  constructor(readonly detail: V1Detail[]) {
    super('v1 request validation failed');
  }
}

export interface V1Request {
  mediaType: 'image' | 'video';
  image: string | null;
  video: string | null;
  framesToAnalyze: number | null;
  topNPredictions: number | null;
}

const MODEL_ATTRIBUTES = 'Input should be a valid dictionary or object to extract fields from';

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Parses the body as FastAPI does: no bytes = missing body; bad JSON = json_invalid. */
export function parseV1Body(raw: Buffer): unknown {
  if (raw.length === 0) return undefined;
  const text = raw.toString('utf8');
  try {
    return JSON.parse(text);
  } catch {
    // The locator recurses; a hostile nesting depth that overflows it still gets a 422.
    let located: { pos: number; msg: string };
    try {
      located = locateJsonError(text);
    } catch {
      located = { pos: 0, msg: 'Expecting value' };
    }
    const { pos, msg } = located;
    throw new V1ValidationError([{ type: 'json_invalid', loc: ['body', pos], msg: 'JSON decode error', input: {}, ctx: { error: msg } }]);
  }
}

/** Python float() of a query string, as pydantic's lax float parsing accepts it. */
function parseFloatLikePython(raw: string): number | null {
  const text = raw.trim();
  if (/^[+-]?(\d+(_\d+)*(\.(\d+(_\d+)*)?)?|\.\d+(_\d+)*)([eE][+-]?\d+(_\d+)*)?$/.test(text)) {
    return Number(text.replace(/_/g, ''));
  }
  const special = text.toLowerCase().replace(/^[+]/, '');
  if (special === 'nan' || special === '-nan') return NaN;
  if (special === 'inf' || special === 'infinity') return Infinity;
  if (special === '-inf' || special === '-infinity') return -Infinity;
  return null;
}

/** Optional[int] in lax mode: ints, integral floats, numeric strings and booleans pass. */
function laxInt(value: unknown, loc: Array<string | number>, errors: V1Detail[]): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'number') {
    if (Number.isInteger(value)) return value;
    errors.push({ type: 'int_from_float', loc, msg: 'Input should be a valid integer, got a number with a fractional part', input: value });
    return null;
  }
  if (typeof value === 'string') {
    const text = value.trim();
    if (/^[+-]?\d+(_\d+)*$/.test(text)) return Number(text.replace(/_/g, ''));
    errors.push({ type: 'int_parsing', loc, msg: 'Input should be a valid integer, unable to parse string as an integer', input: value });
    return null;
  }
  errors.push({ type: 'int_type', loc, msg: 'Input should be a valid integer', input: value });
  return null;
}

function optionalString(value: unknown, loc: Array<string | number>, errors: V1Detail[]): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return value;
  errors.push({ type: 'string_type', loc, msg: 'Input should be a valid string', input: value });
  return null;
}

/** Validates the `threshold` query value; returns null when absent. */
export function validateThreshold(raw: string | null, errors: V1Detail[]): number | null {
  if (raw === null) return null;
  const value = parseFloatLikePython(raw);
  if (value === null) {
    errors.push({
      type: 'float_parsing',
      loc: ['query', 'threshold'],
      msg: 'Input should be a valid number, unable to parse string as a number',
      input: raw,
    });
  } else if (!Number.isFinite(value)) {
    // pydantic would let nan/inf through and make every label constant; we refuse them.
    errors.push({ type: 'finite_number', loc: ['query', 'threshold'], msg: 'Input should be a finite number', input: raw });
    return null;
  }
  return value;
}

export function validateV1Body(body: unknown, errors: V1Detail[]): V1Request | null {
  if (body === undefined) {
    errors.push({ type: 'missing', loc: ['body'], msg: 'Field required', input: null });
    return null;
  }
  if (!isObject(body)) {
    errors.push({ type: 'model_attributes_type', loc: ['body'], msg: MODEL_ATTRIBUTES, input: body });
    return null;
  }
  const start = errors.length;
  let mediaType: 'image' | 'video' = 'image';
  if ('media_type' in body) {
    if (body.media_type === 'image' || body.media_type === 'video') mediaType = body.media_type;
    else {
      errors.push({
        type: 'literal_error',
        loc: ['body', 'media_type'],
        msg: "Input should be 'image' or 'video'",
        input: body.media_type,
        ctx: { expected: "'image' or 'video'" },
      });
    }
  }
  const media = body.media_data;
  let request: V1Request | null = null;
  if (media === undefined) {
    errors.push({ type: 'missing', loc: ['body', 'media_data'], msg: 'Field required', input: body });
  } else if (!isObject(media)) {
    errors.push({ type: 'model_attributes_type', loc: ['body', 'media_data'], msg: MODEL_ATTRIBUTES, input: media });
  } else {
    const at = (field: string) => ['body', 'media_data', field];
    request = {
      mediaType,
      image: optionalString(media.image, at('image'), errors),
      video: optionalString(media.video, at('video'), errors),
      framesToAnalyze: laxInt(media.frames_to_analyze, at('frames_to_analyze'), errors),
      topNPredictions: laxInt(media.top_n_predictions, at('top_n_predictions'), errors),
    };
  }
  return errors.length > start ? null : request;
}
