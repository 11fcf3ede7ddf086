// Configuration of the GPU path: cuDNN's convolution search and the provider probe's time limit.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../src/config';

test('CATCOMFORT_CUDNN_CONV_ALGO_SEARCH: HEURISTIC by default, any case accepted, anything else refused', () => {
  assert.equal(loadConfig({}).cudnnConvAlgoSearch, 'HEURISTIC');
  assert.equal(loadConfig({ CATCOMFORT_CUDNN_CONV_ALGO_SEARCH: 'exhaustive' }).cudnnConvAlgoSearch, 'EXHAUSTIVE');
  assert.equal(loadConfig({ CATCOMFORT_CUDNN_CONV_ALGO_SEARCH: 'DEFAULT' }).cudnnConvAlgoSearch, 'DEFAULT');
  assert.throws(() => loadConfig({ CATCOMFORT_CUDNN_CONV_ALGO_SEARCH: 'fastest' }), (e: unknown) => e instanceof ConfigError && /CATCOMFORT_CUDNN_CONV_ALGO_SEARCH/.test(e.message));
});

test('CATCOMFORT_PROVIDER_PROBE_TIMEOUT_MS: 300000 by default, at least 1000', () => {
  assert.equal(loadConfig({}).providerProbeTimeoutMs, 300_000);
  assert.equal(loadConfig({ CATCOMFORT_PROVIDER_PROBE_TIMEOUT_MS: '2000' }).providerProbeTimeoutMs, 2000);
  assert.throws(() => loadConfig({ CATCOMFORT_PROVIDER_PROBE_TIMEOUT_MS: '10' }), /CATCOMFORT_PROVIDER_PROBE_TIMEOUT_MS must be between 1000 and 3600000/);
});
