// What request handlers share (configuration, keys, models and the release version), and the one
// shape of an interface (v2, v1, OIP REST, gRPC, scans, the admin listener): start.ts starts them
// one after the other and closes them together.
import type { Config } from './config';
import type { DocsAsset } from './http/docs/pages';
import type { KeyRing } from './keys/key-ring';
import type { Router } from './http/router';
import type { Readiness } from './ops/readiness';
import type { ModelRegistry } from './packs/registry';

export interface Service {
  config: Config;
  keys: KeyRing;
  registry: ModelRegistry;
  version: string;
  docsAssets: Record<string, DocsAsset>;
}

/** What an interface is started with: the public port's router, and the service's readiness. */
export interface InterfaceContext {
  router: Router;
  readiness: Readiness;
}

export interface ServiceInterface {
  /** Registers its routes on the public port, or opens its own listener. */
  start(ctx: InterfaceContext): Promise<void>;
  /** Takes no more work and resolves once what it had in flight is done. */
  close(): Promise<void>;
}

/** An interface of routes on the public port alone: the port's own drain ends its requests. */
export function routesInterface(register: (ctx: InterfaceContext) => void): ServiceInterface {
  return { start: async (ctx) => register(ctx), close: async () => {} };
}
