// The native runtime and the model packs, set up from configuration: shared by the service,
// the in-process benchmarks, the provider probe and the tools, so they all run the pipeline the same way.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Config, RuntimeConfig } from '../config';
import { log } from '../log';
import { loadAddon, useBenchBinding, type LowLoadSessions, type NativeAddon, type NativeInfo } from '../native/addon';
import { readDeviceProfile } from '../native/device-profile';
import { planBatching, type BatchingPlan } from './batching-plan';
import type { Precision } from './pack';
import { provenProviders } from './probe/provider-probe';
import { ModelRegistry, type RegistryOptions } from './registry';

/**
 * Configures `addon` (by default the process's binding: the bench one with CATCOMFORT_BENCH_SIMULATE,
 * whose Runs then go to a simulated device, else the service's) from the service configuration.
 */
export function configureAddon(config: RuntimeConfig): { addon: NativeAddon; info: NativeInfo };
export function configureAddon<A extends NativeAddon>(config: RuntimeConfig, addon: A): { addon: A; info: NativeInfo };
export function configureAddon(config: RuntimeConfig, given?: NativeAddon): { addon: NativeAddon; info: NativeInfo } {
  if (config.benchSimulate !== null && given === undefined) useBenchBinding();
  const addon = given ?? loadAddon();
  const native = addon.configure({
    providers: config.providers,
    deviceId: config.deviceId,
    trtCacheDir: config.trtCacheDir,
    trtFp16: config.trtFp16,
    cudnnConvAlgoSearch: config.cudnnConvAlgoSearch,
    pinnedMemory: config.pinnedMemory,
    poolThreads: config.poolThreads,
    intraOpThreads: config.intraOpThreads,
    cpuArena: config.cpuArena,
  });
  const info = config.benchSimulate === null ? native : { ...native, simulatedDevice: readDeviceProfile(config.benchSimulate) };
  return { addon, info };
}

/**
 * Images per ONNX Runtime Run. On CPU a batched Run costs the same per image as single runs
 * (measured: bench/), so images go one per Run and spread over the pool: a lone request's views
 * run in parallel. On a GPU one Run takes a whole request batch with all its views.
 */
export function sessionBatchFor(config: Pick<Config, 'sessionBatch'>, info: NativeInfo): number | null {
  if (config.sessionBatch !== null) return config.sessionBatch;
  return gpuActive(info) ? null : 1;
}

/**
 * The low-load sessions, decided here only (native makes what this says; /v2/stats reports it):
 * CATCOMFORT_LOW_LOAD_THREADS on CPU, where they spread a lone image's Run over idle cores; none
 * (threads 1) when a GPU provider is active, whose Runs are the device's.
 */
export function lowLoadFor(config: Pick<Config, 'lowLoadThreads' | 'lowLoadInFlight'>, info: NativeInfo): LowLoadSessions {
  return { threads: gpuActive(info) ? 1 : config.lowLoadThreads, maxInFlight: config.lowLoadInFlight };
}

/** Whether a GPU provider (anything but cpu) is active, or a simulated device plays one. */
export function gpuActive(info: NativeInfo): boolean {
  return info.simulatedDevice !== undefined || info.providers.some((p) => p.active && p.name !== 'cpu');
}

/** The batching for this configuration on this machine, or the one CATCOMFORT_BENCH_CORES plays (batching-plan.ts). */
export function batchingPlanFor(config: Pick<Config, 'batching' | 'benchCores'>, info: NativeInfo): BatchingPlan {
  return planBatching(config.batching, gpuActive(info), config.benchCores ?? os.availableParallelism());
}

/**
 * The precision wanted: CATCOMFORT_PRECISION, else int8 on CPU (measured 2.4x faster per Run
 * here, quality held: docs/packs.md "Model packs"; each pack proves it first, precision-check.ts) and
 * fp32 on GPU providers (no int8 kernels there).
 */
export function precisionFor(config: Pick<Config, 'precision'>, info: NativeInfo): Precision {
  if (config.precision !== null) return config.precision;
  return gpuActive(info) ? 'fp32' : 'int8';
}

export function registryOptions(config: RuntimeConfig, info: NativeInfo): RegistryOptions {
  const plan = batchingPlanFor(config, info);
  return {
    modelsDir: config.modelsDir,
    maxPixels: config.maxPixels,
    batching: plan.batching,
    fitBatchToSessions: plan.fitToSessions,
    batchingChosenBy: plan.chosenBy,
    sessionBatch: sessionBatchFor(config, info),
    lowLoad: lowLoadFor(config, info),
    precision: precisionFor(config, info),
    precisionForced: config.precision !== null,
    freeModel: config.benchFreeModel,
    simulateDevice: info.simulatedDevice === undefined ? null : { profile: info.simulatedDevice, decode: config.benchSimulateDecode },
  };
}

/**
 * Configures the addon with the providers that passed their probe (src/packs/probe/provider-probe.ts;
 * `verdicts`: where verdicts are remembered) and loads the packs.
 */
export async function loadModels(config: RuntimeConfig, verdicts?: string): Promise<{ addon: NativeAddon; info: NativeInfo; registry: ModelRegistry }> {
  const { addon, info } = configureAddon({ ...config, ...(await provenProviders(config, verdicts)) });
  const registry = await ModelRegistry.load(addon, registryOptions(config, info));
  return { addon, info, registry };
}

/** skimage's public-domain "chelsea" cat photo: warm-up runs the classifier too. */
export function readWarmUpSample(): Buffer {
  return readFileSync(path.join(__dirname, '../../../models/warmup-cat.png'));
}

/**
 * Warms every loaded model up (Model.warmUp's steps): the first Runs and the pipeline runs of all
 * models side by side, the size timing one model at a time so that no Run disturbs another's time.
 * `onStep` hears what is about to run, `onModel` when each model starts warming and when it is ready.
 */
export async function warmUpAll(
  registry: ModelRegistry,
  onStep?: (step: string) => void,
  onModel: (id: string, state: 'warming' | 'ready') => void = () => {},
): Promise<void> {
  const sample = readWarmUpSample();
  const started = performance.now();
  const models = registry.list();
  for (const model of models) onModel(model.id, 'warming');
  const rows = await Promise.all(models.map((model) => model.warmUpRows(sample)));
  await Promise.all(models.map((model) => model.simulateDevice(sample)));
  await Promise.all(models.map((model, i) => model.firstRuns(rows[i]!, onStep)));
  for (const [i, model] of models.entries()) await model.timeSizes(rows[i]!, onStep);
  await Promise.all(
    models.map(async (model) => {
      await model.warmPipeline(sample, onStep);
      onModel(model.id, 'ready');
      const batches = model.sessionBatches();
      log.info('model warmed up', {
        model: model.id,
        session_batches: { detector: batches.detector.map((b) => b.batch), classifier: batches.classifier.map((b) => b.batch) },
        session_batch_timings: model.sizeTimings(),
        batching: model.batchingInEffect(),
        host_memory: model.hostMemory(),
        ms_since_warm_up_start: Math.round(performance.now() - started),
      });
    }),
  );
}
