// The native runtime and the model packs, set up from configuration: shared by the service,
// the in-process benchmarks and the tools, so they all run the pipeline the same way.
import type { Config } from '../config';
import { loadAddon, type NativeAddon, type NativeInfo } from '../native/addon';
import { ModelRegistry } from './registry';

export function configureAddon(config: Config): { addon: NativeAddon; info: NativeInfo } {
  const addon = loadAddon();
  const info = addon.configure({
    providers: config.providers,
    deviceId: config.deviceId,
    trtCacheDir: config.trtCacheDir,
    trtFp16: config.trtFp16,
    poolThreads: config.poolThreads,
    intraOpThreads: config.intraOpThreads,
  });
  return { addon, info };
}

/**
 * Images per ONNX Runtime Run. On CPU a batched Run costs the same per image as single runs
 * (measured: bench/), so images go one per Run and spread over the pool: a lone request's views
 * run in parallel. On a GPU one Run takes a whole request batch with all its views.
 */
export function sessionBatchFor(config: Config, info: NativeInfo): number | null {
  if (config.sessionBatch !== null) return config.sessionBatch;
  return info.providers.some((p) => p.active && p.name !== 'cpu') ? null : 1;
}

export async function loadModels(config: Config): Promise<{ addon: NativeAddon; info: NativeInfo; registry: ModelRegistry }> {
  const { addon, info } = configureAddon(config);
  const registry = await ModelRegistry.load(addon, {
    modelsDir: config.modelsDir,
    maxPixels: config.maxPixels,
    batching: config.batching,
    sessionBatch: sessionBatchFor(config, info),
  });
  return { addon, info, registry };
}
