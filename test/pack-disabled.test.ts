// A disabled pack is validated but not loaded; an enabled pack whose detector output format the
// native pipeline cannot decode stops start-up with a clear message.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { NativeAddon } from '../src/native/addon';
import { ModelRegistry } from '../src/models/registry';
import { repoRoot } from './helpers/paths';

const options = {
  maxPixels: 40_000_000,
  batching: { maxBatchSize: 1, maxQueueDelayUs: 0, maxQueue: 1, maxInFlight: 1 },
  sessionBatch: 1,
};
// Never called: nothing here reaches the native pipeline.
const noAddon = {} as NativeAddon;

function packCopy(edit?: (manifest: Record<string, unknown>) => void): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cc-ssd-pack-'));
  const manifest = JSON.parse(readFileSync(path.join(repoRoot, 'models/bc-v1-ssd/manifest.json'), 'utf8'));
  edit?.(manifest);
  mkdirSync(path.join(dir, 'bc-v1-ssd'));
  // The manifest alone: both outcomes come before any model file is read.
  writeFileSync(path.join(dir, 'bc-v1-ssd/manifest.json'), JSON.stringify(manifest));
  return dir;
}

test('a disabled pack is skipped (here the only one, so no pack is left)', async () => {
  await assert.rejects(ModelRegistry.load(noAddon, { modelsDir: packCopy(), ...options }), /No model packs found/);
});

test('an enabled SSD pack is refused until the native pipeline decodes SSD outputs', async () => {
  const dir = packCopy((m) => delete m.disabled);
  await assert.rejects(ModelRegistry.load(noAddon, { modelsDir: dir, ...options }), /output format "ssd" is not decoded by the native pipeline yet/);
});
