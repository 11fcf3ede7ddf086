// What request handlers share (configuration, keys, models and the release version), and the one
// shape of an interface (v2, v1, OIP REST, gRPC, scans, the admin listener): start.ts starts them
// one after the other and closes them together.
import type { Config } from './config';
import type { DocsAsset } from './http/docs/pages';
import type { ErrorRenderer } from './http/error-answers';
import type { Leaving } from './http/exchange';
import type { HotFindings, HotRequest, HotService } from './http/hot-route';
import type { RequestTiming } from './timing/stage-times';
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

/**
 * Hot routes' end in the service (http/hot-route.ts): it takes a request whose key passes and whose
 * pack is loaded, as their usual routes check first, and runs `analyse` with the request's deadline.
 */
export function hotServiceOf(
  service: Service,
  routes: readonly string[],
  render: ErrorRenderer,
  analyse: (request: HotRequest, body: Buffer, options: { deadline: number; signal: Leaving; timing: RequestTiming }) => Promise<HotFindings>,
): HotService {
  return {
    routes,
    render,
    takes: (request) => service.keys.check(request.apiKey) && service.registry.get(request.model) !== undefined,
    serve: (request, body, options) => analyse(request, body, { ...options, deadline: performance.now() + service.config.requestTimeoutMs }),
  };
}
