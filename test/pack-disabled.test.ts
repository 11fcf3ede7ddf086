// A disabled pack is validated but not loaded.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { NativeAddon } from '../src/native/addon';
import { ModelRegistry } from '../src/packs/registry';
import { repoRoot } from './helpers/paths';

const options = {
  precision: 'fp32' as const,
  maxPixels: 40_000_000,
  batching: { maxBatchSize: 1, maxQueueDelayUs: 0, maxQueue: 1, maxInFlight: 1 },
  sessionBatch: 1,
  lowLoad: { threads: 1, maxInFlight: 1 },
};
// Never called: nothing here reaches the native pipeline.
const noAddon = {} as NativeAddon;

function packCopy(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cc-disabled-pack-'));
  const manifest = JSON.parse(readFileSync(path.join(repoRoot, 'models/bc-v1/manifest.json'), 'utf8'));
  manifest.disabled = true;
  mkdirSync(path.join(dir, 'bc-v1'));
  // The manifest alone: the pack is skipped before any model file is read.
  writeFileSync(path.join(dir, 'bc-v1/manifest.json'), JSON.stringify(manifest));
  return dir;
}

test('a disabled pack is skipped (here the only one, so no pack is left)', async () => {
  await assert.rejects(ModelRegistry.load(noAddon, { modelsDir: packCopy(), precisionForced: false, ...options }), /No model packs found/);
});
