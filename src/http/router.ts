// A small method+path router. Patterns are literal segments or `:name` parameters.
// A path that matches with another method yields the allowed methods for a 405.
// Interfaces mount their error renderer on their path prefix; the longest prefix wins. A protocol
// that shares a prefix with another mounts its renderer on its own routes' patterns, which come first.
// A route may carry its OpenAPI operation: each interface's document is built from the routes of
// its document (paths()), so routes and documents cannot drift apart.
import type { ErrorRenderer } from './error-answers';
import type { Exchange } from './exchange';

export type Handler = (ex: Exchange) => void;

/** The OpenAPI operation of a route, and the document (interface) it belongs to. */
export interface RouteDoc {
  document: 'v2' | 'v1' | 'scan';
  operation: Record<string, unknown>;
}

interface Route {
  pattern: string;
  segments: string[];
  methods: Map<string, Handler>;
  docs: Map<string, RouteDoc>;
}

export type Match =
  | { kind: 'found'; handler: Handler; params: Readonly<Record<string, string>>; pattern: string }
  | { kind: 'method_not_allowed'; allow: string[] }
  | { kind: 'not_found' };

/**
 * What the HTTP front needs of a router on another thread: the routes' methods and which renderer,
 * by name, writes errors where; handlers and documents stay behind.
 */
export interface RouterOutline {
  fallback: string;
  prefixes: Array<{ prefix: string; renderer: string }>;
  patterns: Array<{ pattern: string; renderer: string }>;
  routes: Array<{ pattern: string; methods: string[] }>;
}

const noHandler: Handler = () => undefined;

/** Paths whose route is remembered (the cache is emptied when full, and on every change of routes). */
const REMEMBERED_PATHS = 512;

/** The route a path matched and its parameters (shared by every request of that path, so frozen). */
type PathHit = { route: Route; params: Readonly<Record<string, string>> } | null;

export class Router {
  private readonly routes: Route[] = [];
  private readonly renderers: Array<{ prefix: string; render: ErrorRenderer }> = [];
  private readonly routeRenderers: Array<{ pattern: string; segments: string[]; render: ErrorRenderer }> = [];

  private readonly listeners: Array<() => void> = [];
  private readonly hits = new Map<string, PathHit>();

  /** `fallback` renders errors for paths under no mounted prefix. */
  constructor(private readonly fallback: ErrorRenderer) {}

  /** Hears every change of routes or renderers (routes are added as packs load, after the port opens). */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  private changed(): this {
    this.hits.clear();
    for (const listener of this.listeners) listener();
    return this;
  }

  /** Errors for `prefix` and the paths below it are rendered by `render`. */
  mount(prefix: string, render: ErrorRenderer): this {
    this.renderers.push({ prefix, render });
    this.renderers.sort((a, b) => b.prefix.length - a.prefix.length);
    return this.changed();
  }

  /** Errors for the paths `pattern` matches (`:name` matches any segment) are rendered by `render`, before any prefix's renderer. */
  mountRoute(pattern: string, render: ErrorRenderer): this {
    this.routeRenderers.push({ pattern, segments: pattern.split('/').filter((s) => s !== ''), render });
    return this.changed();
  }

  /** This router's outline, naming each renderer by `nameOf` (which throws for one it does not know). */
  outline(nameOf: (render: ErrorRenderer) => string): RouterOutline {
    return {
      fallback: nameOf(this.fallback),
      prefixes: this.renderers.map((r) => ({ prefix: r.prefix, renderer: nameOf(r.render) })),
      patterns: this.routeRenderers.map((r) => ({ pattern: r.pattern, renderer: nameOf(r.render) })),
      routes: this.routes.map((r) => ({ pattern: r.pattern, methods: [...r.methods.keys()] })),
    };
  }

  /** A router of the same routes and renderers (its handlers do nothing): for allowedMethods and rendererFor on a front thread. */
  static fromOutline(outline: RouterOutline, rendererNamed: (name: string) => ErrorRenderer): Router {
    const router = new Router(rendererNamed(outline.fallback));
    for (const { prefix, renderer } of outline.prefixes) router.mount(prefix, rendererNamed(renderer));
    for (const { pattern, renderer } of outline.patterns) router.mountRoute(pattern, rendererNamed(renderer));
    for (const { pattern, methods } of outline.routes) for (const method of methods) router.add(method, pattern, noHandler);
    return router;
  }

  rendererFor(path: string): ErrorRenderer {
    const parts = path.split('/').filter((s) => s !== '');
    const route = this.routeRenderers.find((r) => matchSegments(r.segments, parts) !== null);
    if (route) return route.render;
    const hit = this.renderers.find((r) => path === r.prefix || path.startsWith(`${r.prefix}/`));
    return hit ? hit.render : this.fallback;
  }

  /** Routes `method pattern` to `handler`; `doc` puts the operation into an OpenAPI document. */
  add(method: string, pattern: string, handler: Handler, doc?: RouteDoc): this {
    const segments = pattern.split('/').filter((s) => s !== '');
    let route = this.routes.find((r) => r.segments.join('/') === segments.join('/'));
    if (!route) {
      route = { pattern: `/${segments.join('/')}`, segments, methods: new Map(), docs: new Map() };
      this.routes.push(route);
    }
    route.methods.set(method.toUpperCase(), handler);
    if (doc) route.docs.set(method.toLowerCase(), doc);
    return this.changed();
  }

  /** The OpenAPI `paths` of one document: its routes' operations, `:name` written as `{name}`. */
  paths(document: RouteDoc['document']): Record<string, Record<string, unknown>> {
    const paths: Record<string, Record<string, unknown>> = {};
    for (const route of this.routes) {
      for (const [method, doc] of route.docs) {
        if (doc.document !== document) continue;
        const key = route.pattern.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
        (paths[key] ??= {})[method] = doc.operation;
      }
    }
    return paths;
  }

  match(method: string, path: string): Match {
    const hit = this.hit(path);
    if (!hit) return { kind: 'not_found' };
    const handler = hit.route.methods.get(method);
    if (handler) return { kind: 'found', handler, params: hit.params, pattern: hit.route.pattern };
    return { kind: 'method_not_allowed', allow: [...hit.route.methods.keys()].sort() };
  }

  /** The first route matching `path`, remembered: most requests repeat a few paths. */
  private hit(path: string): PathHit {
    let hit = this.hits.get(path);
    if (hit !== undefined) return hit;
    const parts = path.split('/').filter((s) => s !== '');
    hit = null;
    for (const route of this.routes) {
      const params = matchSegments(route.segments, parts);
      if (params) {
        hit = { route, params: Object.freeze(params) };
        break;
      }
    }
    if (this.hits.size >= REMEMBERED_PATHS) this.hits.clear();
    this.hits.set(path, hit);
    return hit;
  }

  /** The methods of the first route matching `path` (sorted); empty when no route matches. */
  allowedMethods(path: string): string[] {
    const match = this.match('', path);
    return match.kind === 'method_not_allowed' ? match.allow : [];
  }
}

function matchSegments(pattern: string[], parts: string[]): Record<string, string> | null {
  if (pattern.length !== parts.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const want = pattern[i]!;
    const got = parts[i]!;
    if (want.startsWith(':')) {
      try {
        params[want.slice(1)] = decodeURIComponent(got);
      } catch {
        return null;
      }
    } else if (want !== got) {
      return null;
    }
  }
  return params;
}
