// Server and model metadata and readiness in the protocol's terms: a model is a pack id, its versions
// are the pack versions that answer requests (the serving one and a canary).
import type { ModelRegistry } from '../packs/registry';
import { pickVersion } from '../packs/routed';
import { INPUT, OUTPUTS, type TensorMetadata } from './tensors';

export const SERVER_NAME = 'catcomfort';
/** The protocol extensions served (REST: binary tensor data after the JSON header). */
export const EXTENSIONS = ['binary_tensor_data'];
export const PLATFORM = 'catcomfort_pipeline';

export interface ServerMetadata {
  name: string;
  version: string;
  extensions: string[];
}

export interface ModelMetadata {
  name: string;
  versions: string[];
  platform: string;
  inputs: TensorMetadata[];
  outputs: TensorMetadata[];
}

export function serverMetadata(serviceVersion: string): ServerMetadata {
  return { name: SERVER_NAME, version: serviceVersion, extensions: EXTENSIONS };
}

/** Throws PackNotLoadedError for an unknown model, or a version that is not loaded or never answers. */
export function modelMetadata(registry: ModelRegistry, name: string, version?: string): ModelMetadata {
  pickVersion(registry, name, version || undefined);
  const answering = registry.versions(name)!.list().filter((v) => v.role === 'serving' || v.role === 'canary');
  return { name, versions: answering.map((v) => v.model.version), platform: PLATFORM, inputs: [INPUT], outputs: [...OUTPUTS] };
}

/** Whether `name` (at `version`) would answer now; throws as modelMetadata does when it could never. */
export function modelReady(registry: ModelRegistry, serverReady: boolean, name: string, version?: string): boolean {
  pickVersion(registry, name, version || undefined);
  return serverReady;
}
