// One model pack loaded exactly as the service loads it (providers proven by the probe, the
// session batch for them, the precision its self-check proves, the pack's graph rewrites and
// micro-batcher), without the others.
import path from 'node:path';
import type { Config } from '../config';
import type { Model } from '../packs/model';
import { PackError } from '../packs/pack';
import { provenProviders } from '../packs/probe/provider-probe';
import { loadModel, ModelRegistry } from '../packs/registry';
import { configureAddon, registryOptions } from '../packs/runtime';

/** The model asked for is not an enabled pack of the models folder. */
export class ModelChoiceError extends Error {}

export async function loadOneModel(config: Config, id: string): Promise<Model> {
  let packs;
  try {
    packs = await ModelRegistry.packIds(config.modelsDir);
  } catch (error) {
    if (error instanceof PackError) throw new ModelChoiceError(error.message);
    throw error;
  }
  if (packs.disabled.includes(id)) throw new ModelChoiceError(`model pack "${id}" is disabled in its manifest`);
  if (!packs.enabled.includes(id)) {
    throw new ModelChoiceError(`no model pack "${id}" in ${config.modelsDir} (packs: ${packs.enabled.join(', ') || 'none'})`);
  }
  const { addon, info } = configureAddon({ ...config, ...(await provenProviders(config)) });
  return loadModel(addon, path.join(config.modelsDir, id), registryOptions(config, info));
}
