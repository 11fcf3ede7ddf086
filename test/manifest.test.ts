// Manifest validation: the shipped packs pass; each kind of mistake is reported by path.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { ManifestError, validateManifest } from '../src/models/manifest';
import { repoRoot } from './helpers/paths';

const shipped = JSON.parse(readFileSync(path.join(repoRoot, 'models/bc-v1/manifest.json'), 'utf8'));

function mutated(edit: (m: any) => void): unknown {
  const copy = structuredClone(shipped);
  edit(copy);
  return copy;
}

function rejects(value: unknown, pathPattern: RegExp): void {
  assert.throws(
    () => validateManifest(value, 'test.json'),
    (error: unknown) => error instanceof ManifestError && pathPattern.test(error.message),
  );
}

test('the shipped bc-v1 manifest is valid and has the documented defaults', () => {
  const m = validateManifest(shipped, 'bc-v1');
  assert.equal(m.id, 'bc-v1');
  assert.equal(m.defaultThreshold, 0.3);
  assert.deepEqual(m.cutoffs, { detected: 0.69, lowConfidence: 0.5 });
  assert.equal(m.detector.output.catClassIndex, 15);
});

test('missing, mistyped and out-of-range fields are rejected with their path', () => {
  rejects(mutated((m) => delete m.detector.sha256), /\/detector/);
  rejects(mutated((m) => (m.detector.sha256 = 'abc')), /\/detector\/sha256/);
  rejects(mutated((m) => (m.defaultThreshold = 1.5)), /\/defaultThreshold/);
  rejects(mutated((m) => (m.detector.views = ['plain', 'sideways'])), /\/detector\/views/);
  rejects(mutated((m) => (m.classifier.preprocess.layout = 'chw')), /\/classifier\/preprocess\/layout/);
  rejects(mutated((m) => (m.classifier.preprocess.std = [1, 0, 1])), /\/classifier\/preprocess\/std/);
  rejects(mutated((m) => (m.unexpected = true)), /unexpected|\//);
  rejects(mutated((m) => (m.detector.file = '../escape.onnx')), /\/detector\/file/);
});

test('cross-field rules: cutoff order, class index, calibration monotonicity', () => {
  rejects(mutated((m) => (m.cutoffs = { detected: 0.4, lowConfidence: 0.5 })), /lowConfidence must not exceed detected/);
  rejects(mutated((m) => (m.detector.output.catClassIndex = 80)), /catClassIndex/);
  rejects(mutated((m) => (m.detector.calibration = [[0.5, 0.6], [0.4, 0.7]])), /calibration/);
  rejects(mutated((m) => (m.detector.calibration = [[0.2, 0.6], [0.4, 0.5]])), /calibration/);
});
