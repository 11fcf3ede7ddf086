// v2 request validation and the mapping of native results to outcomes and errors.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { DetectionState, ItemResult } from '../src/native/addon';
import { v1Base64Message } from '../src/v1/respond';
import { ImageError, PipelineError, toAnalysis } from '../src/pipeline/analysis';
import { ApiError, errorTable, type ErrorKind } from '../src/errors';
import { HTTP_STATUS } from '../src/http/error-answers';
import { parseJsonObject } from '../src/http/json-body';
import { validatePredictRequest } from '../src/v2/validate';

const timings = { decodeMs: 1, detectMs: 1, cropMs: 0, classifyMs: 1, analyzeMs: 3 };

function success(detection: DetectionState, confidence: number | null, score: number | null): ItemResult {
  return {
    ok: true,
    width: 10,
    height: 20,
    cat: confidence === null ? null : { box: [1, 2, 3, 4], confidence, rawScore: confidence },
    detection,
    score,
    timings,
  };
}

function errorsOf(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof ApiError);
    assert.equal(HTTP_STATUS[error.kind], 422);
    return error.details.errors;
  }
  assert.fail('expected a validation error');
}

test('valid requests pass through unchanged', () => {
  assert.deepEqual(validatePredictRequest({ image: 'aGk=' }), { image: 'aGk=' });
  assert.deepEqual(validatePredictRequest({ image: 'aGk=', threshold: 0 }), { image: 'aGk=', threshold: 0 });
  assert.deepEqual(validatePredictRequest({ image: 'aGk=', threshold: null }), { image: 'aGk=', threshold: null });
});

test('field messages follow pydantic wording and never carry the value', () => {
  assert.deepEqual(errorsOf(() => validatePredictRequest({ threshold: 2 })), [
    { field: 'image', message: 'Field required' },
    { field: 'threshold', message: 'Input should be less than or equal to 1' },
  ]);
  assert.deepEqual(errorsOf(() => validatePredictRequest({ image: 'x', threshold: false })), [
    { field: 'threshold', message: 'Input should be a valid number' },
  ]);
  assert.deepEqual(errorsOf(() => parseJsonObject(Buffer.from('{'))), [{ field: 'body', message: 'JSON decode error' }]);
  assert.deepEqual(errorsOf(() => parseJsonObject(Buffer.alloc(0))), [{ field: 'body', message: 'Field required' }]);
});

test('the outcome carries the native decision: the cat unless not detected, the score only when detected', () => {
  const detected = toAnalysis(success('detected', 0.69, 0.4), 100);
  assert.deepEqual([detected.detection, detected.cat?.confidence, detected.score], ['detected', 0.69, 0.4]);
  const low = toAnalysis(success('low_confidence', 0.6, null), 100);
  assert.deepEqual(low.cat, { box: [1, 2, 3, 4], confidence: 0.6 });
  assert.equal(low.score, null);
  const none = toAnalysis(success('not_detected', 0.4999, null), 100);
  assert.equal(none.detection, 'not_detected');
  assert.equal(none.cat, null);
  assert.equal(toAnalysis(success('not_detected', null, null), 100).cat, null);
});

test('native failures map to client image errors or internal errors', () => {
  const fail = (code: any, extra: object = {}): ItemResult => ({ ok: false, code, ...extra });
  assert.throws(() => toAnalysis(fail('invalid_base64'), 100), (e: any) => e instanceof ImageError && e.message === 'Image is not valid base64.' && e.base64 === undefined);
  assert.throws(() => toAnalysis(fail('empty_image'), 100), (e: any) => e.message === 'Image is empty.');
  assert.throws(() => toAnalysis(fail('undecodable'), 100), (e: any) => e.message === 'Image could not be decoded.');
  assert.throws(() => toAnalysis(fail('unsupported_format'), 100), (e: any) => e.message === 'Unsupported pixel format; send an 8-bit image.');
  assert.throws(() => toAnalysis(fail('too_many_pixels'), 100), (e: any) => e.message === 'Image is too large; at most 100 pixels.');
  assert.throws(() => toAnalysis(fail('internal', { internal: 'session failed' }), 100), (e: any) => e instanceof PipelineError && e.message === 'session failed');
  // A lenient failure keeps its reason for v1's wording; v2 still says the v2 text.
  const lenient = (extra: object) => {
    try {
      toAnalysis(fail('invalid_base64', extra), 100);
    } catch (error) {
      assert.ok(error instanceof ImageError);
      assert.equal(error.message, 'Image is not valid base64.');
      return v1Base64Message(error.base64, 'none');
    }
    assert.fail('expected an ImageError');
  };
  assert.equal(lenient({ reason: 'incorrect_padding' }), 'Incorrect padding');
  assert.equal(lenient({ reason: 'non_ascii' }), 'string argument should contain only ASCII characters');
  assert.equal(lenient({ reason: 'data_characters', dataCharacters: 5 }), 'Invalid base64-encoded string: number of data characters (5) cannot be 1 more than a multiple of 4');
});

test('the error table gives every 7.1 code its status', () => {
  const byCode = new Map<string, number[]>();
  for (const [kind, entry] of Object.entries(errorTable)) byCode.set(entry.code, [...(byCode.get(entry.code) ?? []), HTTP_STATUS[kind as ErrorKind]]);
  assert.deepEqual(byCode.get('invalid_image'), [400]);
  assert.deepEqual(byCode.get('unauthorized'), [401]);
  assert.deepEqual(byCode.get('model_not_found'), [404]);
  assert.deepEqual(byCode.get('not_found'), [404]);
  assert.deepEqual(byCode.get('method_not_allowed'), [405]);
  assert.deepEqual(byCode.get('invalid_request'), [422]);
  assert.deepEqual(byCode.get('internal_error'), [500]);
  assert.ok(byCode.get('http_error')!.every((s) => s >= 400 && s < 500));
});
