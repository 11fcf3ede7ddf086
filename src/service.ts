// What request handlers share: configuration, keys, models, the providers in use and the release version.
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
  /** The execution providers in use (those that loaded and passed their probe; cpu last). */
  providers: string[];
}
