// What request handlers share: configuration, keys, models and the release version.
import type { Config } from './config';
import type { DocsAsset } from './http/docs/pages';
import type { KeyRing } from './http/auth';
import type { ModelRegistry } from './packs/registry';

export interface Service {
  config: Config;
  keys: KeyRing;
  registry: ModelRegistry;
  version: string;
  docsAssets: Record<string, DocsAsset>;
}
