// v1 response bodies (spec 2.5-2.7, 7.2): every field in the documented order, the
// probability rules, and the fixed response-format version.
import { isDiscomfort, type Analysis, type ImageError } from '../pipeline/analysis';

export const V1_FORMAT_VERSION = '2023-11-22';

export interface V1Box {
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

export interface V1Response {
  mood_class: number;
  prediction: 'Unhappy' | 'Happy' | 'Unknown';
  probability: number;
  threshold: number | null;
  message: string;
  success: boolean;
  cat_quality: number | null;
  cat_detected: boolean;
  additional_data: Record<string, unknown> | null;
  version: string;
  inference_metadata: { version: string; build_number: string } | null;
}

export const V1_MESSAGES = {
  success: 'Success',
  noCat: 'No cats detected',
  lowQuality: 'Cat image quality is too low',
  loadError: 'Error loading image from base64 string',
} as const;

/**
 * v1's words for a base64 failure: what CPython 3.11's b64decode raised (the service v1 imitates).
 * Without a lenient reason (not expected on v1), the v2 text.
 */
export function v1Base64Message(base64: ImageError['base64'], fallback: string): string {
  if (base64?.reason === 'non_ascii') return 'string argument should contain only ASCII characters';
  if (base64?.reason === 'incorrect_padding') return 'Incorrect padding';
  if (base64?.reason === 'data_characters') {
    return `Invalid base64-encoded string: number of data characters (${base64.dataCharacters}) cannot be 1 more than a multiple of 4`;
  }
  return fallback;
}

/** mood_class 1 when p > threshold; probability is the confidence in the returned class. */
export function moodOf(p: number, threshold: number): { mood_class: 0 | 1; prediction: 'Unhappy' | 'Happy'; probability: number } {
  const unhappy = isDiscomfort(p, threshold);
  return {
    mood_class: unhappy ? 1 : 0,
    prediction: unhappy ? 'Unhappy' : 'Happy',
    probability: unhappy ? p : Math.round((1 - p) * 1e6) / 1e6,
  };
}

export function failure(message: string, threshold: number | null, catQuality: number | null = null): V1Response {
  return {
    mood_class: -1,
    prediction: 'Unknown',
    probability: 0.0,
    threshold,
    message,
    success: false,
    cat_quality: catQuality,
    cat_detected: false,
    additional_data: null,
    version: V1_FORMAT_VERSION,
    inference_metadata: null,
  };
}

export function boxOf(analysis: Analysis): V1Box {
  const [x1, y1, x2, y2] = analysis.cat!.box;
  return { x1, y1, x2, y2 };
}

/** The outcome of one analysed image as a v1 body; `success` only for a detected cat. */
export function fromAnalysis(
  analysis: Analysis,
  threshold: number,
  reported: { success: number | null; failure: number | null },
  modelName: string,
  metadata: V1Response['inference_metadata'],
): V1Response {
  if (analysis.detection === 'not_detected') return failure(V1_MESSAGES.noCat, reported.failure);
  const quality = analysis.cat!.confidence;
  if (analysis.detection === 'low_confidence') return failure(V1_MESSAGES.lowQuality, reported.failure, quality);
  const box = boxOf(analysis);
  const t = analysis.timings;
  return {
    ...moodOf(analysis.score!, threshold),
    threshold: reported.success,
    message: V1_MESSAGES.success,
    success: true,
    cat_quality: quality,
    cat_detected: true,
    additional_data: {
      input_dimensions: `${analysis.width}x${analysis.height}`,
      detected_cat_dimensions: `${box.x2 - box.x1}x${box.y2 - box.y1}`,
      size_unit: 'pixels',
      extraction_time: seconds(t.decodeMs + t.detectMs),
      inference_time: seconds(t.cropMs + t.classifyMs),
      time_unit: 'seconds',
      bounding_box_cat: [box],
      model: modelName,
    },
    version: V1_FORMAT_VERSION,
    inference_metadata: metadata,
  };
}

export function seconds(ms: number): number {
  return Math.round(ms * 1e3) / 1e6;
}
