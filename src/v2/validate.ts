// Body parsing and validation for v2, with pydantic-style messages (spec 7.1, 422 rules).
// TypeBox's compiled check is the fast path; on failure each field gets one message in
// pydantic's wording (the texts v1 clients already know), never echoing the submitted value.
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { validationError, type FieldError } from '../errors';
import { PredictRequest, THRESHOLD_RANGE } from './schemas';

const predictCheck = TypeCompiler.Compile(PredictRequest);

function imageMessage(value: unknown): string | null {
  if (value === undefined) return 'Field required';
  if (typeof value !== 'string') return 'Input should be a valid string';
  if (value.length === 0) return 'String should have at least 1 character';
  return null;
}

function thresholdMessage(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isFinite(value)) return 'Input should be a valid number';
  if (value < THRESHOLD_RANGE.minimum) return `Input should be greater than or equal to ${THRESHOLD_RANGE.minimum}`;
  if (value > THRESHOLD_RANGE.maximum) return `Input should be less than or equal to ${THRESHOLD_RANGE.maximum}`;
  return null;
}

export function validatePredictRequest(body: Record<string, unknown>): PredictRequest {
  if (predictCheck.Check(body)) return body;
  const errors: FieldError[] = [];
  const image = imageMessage(body.image);
  if (image) errors.push({ field: 'image', message: image });
  const threshold = thresholdMessage(body.threshold);
  if (threshold) errors.push({ field: 'threshold', message: threshold });
  if (errors.length === 0) errors.push({ field: 'body', message: 'Input is not a valid PredictRequest' });
  throw validationError(errors);
}
