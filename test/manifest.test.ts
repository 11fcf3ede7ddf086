// Manifest validation: the shipped packs pass; each kind of mistake is reported by path.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { ManifestError, validateManifest } from '../src/packs/manifest';
import { repoRoot } from './helpers/paths';

const shipped = JSON.parse(readFileSync(path.join(repoRoot, 'models/bc-v1/manifest.json'), 'utf8'));
const legacy = JSON.parse(readFileSync(path.join(repoRoot, 'models/bc-legacy/manifest.json'), 'utf8'));

function mutated(edit: (m: any) => void, base: unknown = shipped): unknown {
  const copy = structuredClone(base);
  edit(copy);
  return copy;
}

function rejects(value: unknown, pathPattern: RegExp): void {
  assert.throws(
    () => validateManifest(value, 'test.json'),
    (error: unknown) => error instanceof ManifestError && pathPattern.test(error.message),
  );
}

test('the shipped manifests are valid and have the documented defaults', () => {
  const m = validateManifest(shipped, 'bc-v1');
  assert.equal(m.id, 'bc-v1');
  assert.equal(m.disabled, undefined);
  assert.equal(m.defaultThreshold, 0.3);
  assert.deepEqual(m.cutoffs, { detected: 0.69, lowConfidence: 0.5 });
  assert.equal(m.detector.output.format, 'ssd');
  assert.deepEqual(m.detector.views, ['plain']);
  assert.equal(m.verifier?.maxCandidates, 3);
  assert.equal(m.verifier?.rule.maxLookalikeMass, 0.7);
  assert.ok('backbone' in m.classifier && m.classifier.reference);
  assert.deepEqual(m.detector.calibration, [[0, 0], [0.3, 0.5], [0.37, 0.69], [1, 1]]);
  const l = validateManifest(legacy, 'bc-legacy');
  assert.equal(l.detector.output.format, 'yolox');
  assert.equal(l.detector.output.catClassIndex, 15);
  assert.equal(l.detector.viewCombine, undefined, 'max, the default');
});

test('missing, mistyped and out-of-range fields are rejected with their path', () => {
  rejects(mutated((m) => delete m.detector.sha256), /\/detector/);
  rejects(mutated((m) => (m.detector.sha256 = 'abc')), /\/detector\/sha256/);
  rejects(mutated((m) => (m.defaultThreshold = 1.5)), /\/defaultThreshold/);
  rejects(mutated((m) => (m.detector.views = ['plain', 'sideways'])), /\/detector\/views/);
  rejects(mutated((m) => (m.detector.viewCombine = 'mean')), /\/detector\/viewCombine/);
  rejects(mutated((m) => (m.classifier.preprocess.layout = 'chw')), /\/classifier\/preprocess\/layout/);
  rejects(mutated((m) => (m.classifier.preprocess.std = [1, 0, 1])), /\/classifier\/preprocess\/std/);
  rejects(mutated((m) => (m.unexpected = true)), /unexpected|\//);
  rejects(mutated((m) => (m.detector.file = '../escape.onnx')), /\/detector\/file/);
  rejects(mutated((m) => (m.classifier.backbone.float.sha256 = 'x')), /\/classifier\/backbone\/float\/sha256/);
  rejects(mutated((m) => (m.verifier.rule.maxLookalikeMass = 2)), /\/verifier\/rule\/maxLookalikeMass/);
  rejects(mutated((m) => (m.verifier.rule.dogClasses = { dogs: [[151, 1000]] })), /\/verifier\/rule\/dogClasses/);
});

test('a classifier is one network or a head on the ImageNet backbone, whole; the verifier needs the backbone', () => {
  rejects(mutated((m) => Object.assign(m.classifier, { file: 'c.onnx', sha256: 'a'.repeat(64), outputIndex: 0 })), /\/classifier: give either file, sha256, outputIndex \(one network\) or backbone, head/);
  rejects(mutated((m) => delete m.classifier.head), /\/classifier: missing head/);
  rejects(mutated((m) => delete m.classifier.backbone), /\/classifier: missing backbone/);
  const network = { file: 'c.onnx', sha256: 'a'.repeat(64), outputIndex: 0 };
  rejects(mutated((m) => { delete m.classifier.backbone; delete m.classifier.head; Object.assign(m.classifier, network); }), /\/verifier: needs a classifier with an ImageNet backbone/);
  assert.doesNotThrow(() => validateManifest(mutated((m) => { delete m.classifier.backbone; delete m.classifier.head; delete m.verifier; Object.assign(m.classifier, network); }), 'network'));
  rejects(mutated((m) => (m.verifier.rule.catClasses = { cats: [[281, 285]], also: [286] })), /\/verifier\/rule: a class is named twice/);
  rejects(mutated((m) => (m.verifier.rule.dogClasses = { dogs: [[268, 151]] })), /\/verifier\/rule: a class range is \[first, last\]/);
  // A new version of bc-v1 staged beside it (models/bc-v1@1.3.0) takes its files from models/bc-v1.
  assert.doesNotThrow(() => validateManifest(mutated((m) => (m.filesFrom = 'bc-v1')), 'staged version'));
});

test('cross-field rules: cutoff order, class index, calibration monotonicity', () => {
  rejects(mutated((m) => (m.cutoffs = { detected: 0.4, lowConfidence: 0.5 })), /lowConfidence must not exceed detected/);
  rejects(mutated((m) => (m.detector.output.catClassIndex = 80), legacy), /catClassIndex/);
  rejects(mutated((m) => (m.detector.calibration = [[0.5, 0.6], [0.4, 0.7]])), /calibration/);
  rejects(mutated((m) => (m.detector.calibration = [[0.2, 0.6], [0.4, 0.5]])), /calibration/);
});

const ssdMutated = (edit: (m: any) => void) => mutated(edit);

test('the bc-v1 detector: an npm source converted from TFLite, SSD output', () => {
  const m = validateManifest(shipped, 'bc-v1');
  assert.deepEqual(m.detector.source, {
    npm: '@mediapipe/objectron',
    version: '0.4.1675468480',
    file: 'objectron_solution_packed_assets.data',
    byteRange: [184, 9987912],
    sha256: 'd0a5255bf8c4f5a0bc4240741a76c41d5e939f7655078f945f50ab53a9375da6',
    convert: 'tflite',
  });
  assert.equal(m.detector.output.format, 'ssd');
  assert.equal(m.detector.output.catClassIndex, 8);
  // The version pinned in package.json is the one the manifest names.
  const pkg = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8'));
  assert.equal(pkg.dependencies['@mediapipe/objectron'], m.detector.source!.version);
});

test('npm source and SSD output mistakes are rejected with their path', () => {
  rejects(ssdMutated((m) => (m.detector.url = 'https://example.org/x.onnx')), /\/detector\/source: give either source or url/);
  rejects(ssdMutated((m) => (m.detector.source.byteRange = [10, 10])), /\/detector\/source\/byteRange/);
  rejects(ssdMutated((m) => (m.detector.source.file = '../../etc/passwd')), /\/detector\/source\/file/);
  rejects(ssdMutated((m) => (m.detector.source.file = 'a/../b')), /\/detector\/source\/file/);
  rejects(ssdMutated((m) => (m.detector.source.convert = 'caffe')), /\/detector\/source\/convert/);
  rejects(ssdMutated((m) => (m.detector.source.sha256 = 'x')), /\/detector\/source\/sha256/);
  rejects(ssdMutated((m) => (m.detector.source.npm = 'Not A Name')), /\/detector\/source\/npm/);
  rejects(ssdMutated((m) => (m.detector.output.catClassIndex = 24)), /catClassIndex/);
  rejects(ssdMutated((m) => (m.detector.output.anchors.minScale = 0.99)), /minScale must not exceed maxScale/);
  rejects(ssdMutated((m) => delete m.detector.output.boxCoderScales), /\/detector\/output/);
  rejects(ssdMutated((m) => (m.disabled = 'yes')), /\/disabled/);
});

test('a training record belongs to a trained classifier only, and is validated', () => {
  const training = {
    tool: 'catcomfort train-head',
    trainedAt: '2026-01-01T00:00:00.000Z',
    basePack: 'bc-v1@1.1.0',
    backbone: { stage: 'conv-1280', inputSize: 224, sha256: 'a'.repeat(64) },
    seed: 1,
    validationFraction: 0.25,
    l2: 0.01,
    cvFolds: 5,
    counts: { train: { comfort: 3, discomfort: 3 }, validation: { comfort: 1, discomfort: 1 }, skipped: 0 },
    validation: { balancedAccuracy: 1, balancedAccuracyAtHalf: 1, auc: 1, threshold: 0.5, confusion: { tp: 1, fn: 0, fp: 0, tn: 1 } },
  };
  const trained = mutated((m) => Object.assign(m.classifier, { reference: false, training }));
  assert.deepEqual(validateManifest(trained, 'trained').classifier.training, training);
  rejects(mutated((m) => (m.classifier.training = training)), /\/classifier\/training: a reference classifier has no training record/);
  rejects(mutated((m) => Object.assign(m.classifier, { reference: false, training: { ...training, validation: { ...training.validation, auc: 2 } } })), /\/classifier\/training\/validation\/auc/);
});
