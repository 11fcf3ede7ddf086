// The admin listener (CATCOMFORT_ADMIN_PORT, on CATCOMFORT_ADMIN_HOST, never the public port): pack
// versions changed while serving (src/packs/control/pack-control.ts), for `catcomfort packs`, and
// the fleet view (fleet-view.ts). A plain
// node:http server with JSON in and out, keys in `Authorization: Bearer`, and one audit log line
// per action and per refused request, naming the admin key's id. Its refusals are the house's coded
// errors (src/errors/), written in its own `{"error": {code, message}}` body.
import http from 'node:http';
import { ApiError, BodyTooLargeError } from '../../errors';
import { HTTP_STATUS } from '../../http/error-answers';
import { readSideBody } from '../../http/side-body';
import { listenBeside, type SideListener } from '../../http/side-listener';
import { log } from '../../log';
import { PackError } from '../pack';
import type { PackControl } from './pack-control';
import type { ModelRegistry } from '../registry';
import { VersionError, type CandidateRole } from '../versions';
import type { AdminKeys } from './admin-keys';

const MAX_BODY = 64 * 1024;
const ROLES: readonly CandidateRole[] = ['standby', 'shadow', 'canary'];

const invalid = (message: string) => new ApiError('invalid_request', message);

/** The body as a JSON object; an empty body is an empty object. */
async function readJson(req: http.IncomingMessage): Promise<Record<string, unknown>> {
  const body = await readSideBody(req, MAX_BODY).catch((error: unknown) => {
    throw error instanceof BodyTooLargeError ? invalid(`the body is over ${MAX_BODY} bytes`) : error;
  });
  try {
    const value: unknown = body.length === 0 ? {} : JSON.parse(body.toString('utf8'));
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('not an object');
    return value as Record<string, unknown>;
  } catch {
    throw invalid('the body must be a JSON object');
  }
}

function text(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (typeof value !== 'string' || value === '') throw invalid(`"${field}" must be a non-empty string`);
  return value;
}

/** `id@version` (or `id` alone where `versionOptional`). */
function packRef(body: Record<string, unknown>, versionOptional = false): { id: string; version: string | null } {
  const ref = text(body, 'pack');
  const at = ref.indexOf('@');
  if (at === -1) {
    if (!versionOptional) throw invalid('"pack" must be ID@VERSION');
    return { id: ref, version: null };
  }
  return { id: ref.slice(0, at), version: ref.slice(at + 1) };
}

/** Role and share of a candidate: standby; shadow with share in (0, 1], default 1 (every request); canary with share in (0, 1]. */
function roleOf(body: Record<string, unknown>): { role: CandidateRole; share: number } {
  const role = body.role ?? 'standby';
  if (typeof role !== 'string' || !ROLES.includes(role as CandidateRole)) throw invalid(`"role" must be one of ${ROLES.join(', ')}`);
  if (role === 'standby') {
    if (body.share !== undefined) throw invalid('a standby takes no "share"');
    return { role, share: 0 };
  }
  const share = body.share ?? (role === 'shadow' ? 1 : undefined);
  if (typeof share !== 'number' || !(share > 0 && share <= 1)) throw invalid(`a ${role} needs "share", a number in (0, 1] (0.1 = 10 %)${role === 'shadow' ? '; without it, every request' : ''}`);
  return { role: role as CandidateRole, share };
}

export interface AdminContext {
  keys: AdminKeys;
  control: PackControl;
  registry: ModelRegistry;
  /** The fleet view (fleet-view.ts). */
  fleet: () => Promise<unknown>;
}

/** Every pack id with its loaded versions, and the versions being loaded. */
function listing(ctx: AdminContext) {
  return {
    packs: ctx.registry.all().map((p) => ({
      id: p.id,
      versions: p.list().map((v) => ({ version: v.model.version, role: v.role, share: v.share, since: new Date(v.since).toISOString(), dir: v.model.dir })),
    })),
    loading: ctx.control.loadingStates(),
  };
}

type Action = (ctx: AdminContext, body: Record<string, unknown>, keyId: string) => Promise<{ pack: string; versions: string }>;

const ACTIONS: Record<string, Action> = {
  load: (ctx, body, keyId) => {
    const { role, share } = roleOf(body);
    return ctx.control.load(text(body, 'dir'), role, share, keyId);
  },
  route: (ctx, body, keyId) => {
    const { id, version } = packRef(body);
    const { role, share } = roleOf(body);
    return ctx.control.route(id, version!, role, share, keyId);
  },
  promote: (ctx, body, keyId) => {
    const { id, version } = packRef(body);
    return ctx.control.promote(id, version!, keyId);
  },
  rollback: (ctx, body, keyId) => ctx.control.rollback(text(body, 'pack'), keyId),
  unload: (ctx, body, keyId) => {
    const { id, version } = packRef(body, true);
    return ctx.control.unload(id, version, keyId);
  },
};

/** The admin listener's failures as coded errors: its own two (a version conflict, a refused pack), and any other failure as an internal error. */
function coded(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof VersionError) return new ApiError('version_conflict', error.message);
  if (error instanceof PackError) return new ApiError('pack_refused', error.message);
  log.error('admin action failed', { error: String(error) });
  return new ApiError('internal_error', 'The action failed unexpectedly; see the service log.');
}

/** The table's HTTP status, but for a request the admin listener cannot read, 400 as ever (the table's 422 is v2's, spec 7.1). */
function statusOf(error: ApiError): number {
  return error.kind === 'invalid_request' ? 400 : HTTP_STATUS[error.kind];
}

/** What a request's audit line names, filled in as the request is understood. */
interface Audit {
  action: string | null;
  keyId: string | null;
  request: Record<string, unknown> | null;
  versions?: string;
}

async function handle(ctx: AdminContext, req: http.IncomingMessage, audit: Audit): Promise<{ status: number; body: unknown }> {
  const path = (req.url ?? '').split('?')[0]!;
  const name = /^\/packs\/([a-z]+)$/.exec(path)?.[1];
  const action = req.method === 'POST' && name !== undefined && Object.hasOwn(ACTIONS, name) ? ACTIONS[name]! : null;
  audit.action = action ? name! : req.method === 'GET' && (path === '/packs' || path === '/fleet') ? null : `${req.method} ${path}`;
  const auth = req.headers.authorization ?? '';
  audit.keyId = ctx.keys.identify(auth.startsWith('Bearer ') ? auth.slice(7).trim() : undefined);
  if (audit.keyId === null) throw new ApiError('unauthorized', 'Missing or invalid admin key (Authorization: Bearer <key>).');
  if (req.method === 'GET' && path === '/packs') return { status: 200, body: listing(ctx) };
  if (req.method === 'GET' && path === '/fleet') return { status: 200, body: await ctx.fleet() };
  if (!action) throw new ApiError('not_found', 'Routes: GET /packs, GET /fleet; POST /packs/load, /packs/route, /packs/promote, /packs/rollback, /packs/unload.');
  audit.request = await readJson(req);
  const result = await action(ctx, audit.request, audit.keyId);
  audit.versions = result.versions;
  return { status: 200, body: { ...result, ...listing(ctx) } };
}

/**
 * One audit line per action done and per request refused (401, 404, 400, 409, 422, ...): the action
 * (or method and path), the key's id (never the key), the client's address, the body, the outcome.
 * A listing (GET /packs, GET /fleet) that succeeds is not an action and leaves none.
 */
function auditLine(req: http.IncomingMessage, audit: Audit, started: number, failure: ApiError | null): void {
  if (!failure && audit.action === null) return;
  const fields = {
    action: audit.action ?? `${req.method} ${(req.url ?? '').split('?')[0]}`,
    key_id: audit.keyId,
    client: req.socket.remoteAddress ?? null,
    request: audit.request,
    status: failure ? statusOf(failure) : 200,
    outcome: failure?.code ?? 'done',
    ...(failure ? { error: failure.message } : { versions: audit.versions }),
    ms: Math.round(performance.now() - started),
  };
  if (failure) log.warn('admin action', fields);
  else log.info('admin action', fields);
}

export function startAdminServer(host: string, port: number, ctx: AdminContext): Promise<SideListener> {
  const server = http.createServer((req, res) => {
    const started = performance.now();
    const audit: Audit = { action: null, keyId: null, request: null };
    handle(ctx, req, audit).then(
      (r) => {
        auditLine(req, audit, started, null);
        res.writeHead(r.status, { 'Content-Type': 'application/json' }).end(JSON.stringify(r.body));
      },
      (error: unknown) => {
        const e = coded(error);
        auditLine(req, audit, started, e);
        res.writeHead(statusOf(e), { 'Content-Type': 'application/json' }).end(JSON.stringify({ error: { code: e.code, message: e.message } }));
      },
    );
  });
  return listenBeside(server, host, port, 'CATCOMFORT_ADMIN_PORT');
}
