// A pack unloaded after the route's check and before the pick (while the body was read) is a 404
// model_not_found, as an unknown pack is, not a 500: the pick's PackNotLoadedError maps to it.
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { loadConfig } from '../src/config';
import { toApiError } from '../src/errors';
import { HTTP_STATUS } from '../src/http/error-answers';
import { PackNotLoadedError } from '../src/pipeline/analysis';
import { loadModels } from '../src/packs/runtime';
import { predict } from '../src/v2/predict';
import { photo, repoRoot } from './helpers/paths';

test('predict for a pack no longer loaded rejects with PackNotLoadedError, answered 404 model_not_found', async () => {
  const modelsDir = mkdtempSync(path.join(os.tmpdir(), 'cc-gone-'));
  cpSync(path.join(repoRoot, 'models', 'bc-legacy'), path.join(modelsDir, 'bc-legacy'), { recursive: true });
  const { registry } = await loadModels(loadConfig({ CATCOMFORT_MODELS_DIR: modelsDir, CATCOMFORT_EXECUTION_PROVIDERS: 'cpu' }));
  try {
    const image = readFileSync(photo('000_skimage_chelsea.png')).toString('base64');
    const error = await predict({ serviceVersion: 'test' }, registry, 'bc-gone', { image }, 'req-1', {}).then(
      () => assert.fail('answered for a pack that is not loaded'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof PackNotLoadedError);
    const answer = toApiError(error)!;
    assert.equal(HTTP_STATUS[answer.kind], 404);
    assert.equal(answer.kind, 'model_not_found');
    assert.equal(answer.message, "Model 'bc-gone' not found.");
  } finally {
    await registry.closeAll();
  }
});
