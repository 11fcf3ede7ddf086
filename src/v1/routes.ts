// The legacy v1 interface (spec 2.4-2.7, 4.2, 7.2): /invocations, /invocations/bc-v1,
// /invocations/bc-legacy, /ping, and the key-protected /openapi.json and /docs.
import { createHash } from 'node:crypto';
import { isJsonContentType } from '../http/content-type';
import { swaggerPage } from '../http/docs/pages';
import { exampleImageBase64 } from '../http/docs/example-image';
import { ApiError, requestIdFrom } from '../errors';
import type { Exchange } from '../http/exchange';
import { queryParam } from '../http/query';
import { sendError } from '../http/respond';
import type { Router } from '../http/router';
import { log } from '../log';
import { analyzeRouted, appliedThreshold } from '../packs/routed';
import { ImageError } from '../pipeline/analysis';
import { Semaphore } from '../pipeline/semaphore';
import { routesInterface, type Service, type ServiceInterface } from '../service';
import { renderV1Error } from './errors';
import { buildV1OpenApi, v1Operations } from './openapi';
import { failure, fromAnalysis, v1Base64Message, V1_MESSAGES, type V1Response } from './respond';
import { analyzeVideo } from './video';
import { parseV1Body, validateThreshold, validateV1Body, V1ValidationError, type V1Detail, type V1Request } from './validate';

const VIDEO_ON_IMAGE_ENDPOINT = 'Video input is not supported on this endpoint; send video to /invocations/bc-legacy.';

function json(ex: Exchange, status: number, body: unknown, headers: Record<string, string> = {}): void {
  ex.send(status, { 'Content-Type': 'application/json', ...headers }, JSON.stringify(body));
}

/** 422 body; echoed inputs too deep to serialise are replaced by null rather than failing. */
function validationBody(detail: V1Detail[]): string {
  try {
    return JSON.stringify({ detail });
  } catch {
    return JSON.stringify({ detail: detail.map((d) => ({ ...d, input: null })) });
  }
}

/** Errors that end a v1 request outside the 200 success:false family. Never throws. */
function sendFailure(ex: Exchange, error: unknown, headers: Record<string, string>): void {
  if (error instanceof V1ValidationError) {
    if (!ex.aborted) ex.send(422, { 'Content-Type': 'application/json', ...headers }, validationBody(error.detail));
    return;
  }
  sendError(ex, renderV1Error, requestIdFrom(ex.header('x-request-id')), error, headers);
}

interface Variant {
  /** The pack id; its answering version is picked per request (packs/routed.ts). */
  modelId: string;
  legacy: boolean;
}

export interface V1Context {
  service: Service;
  ffmpegSlots: Semaphore;
  buildNumber: string;
  deprecationHeaders: Record<string, string>;
}

/** One image through the shared pipeline, answered the v1 way. */
async function analyzeImage(ctx: V1Context, variant: Variant, request: V1Request, queryThreshold: number | null, ex: Exchange, deadline: number): Promise<V1Response> {
  const { modelId, legacy } = variant;
  const reported = legacy ? null : queryThreshold;
  if (request.image === null) return failure(V1_MESSAGES.loadError, reported);
  try {
    const item = { data: request.image, encoding: 'base64-lenient' } as const;
    const { analysis, model } = await analyzeRouted(ctx.service.registry, modelId, item, { deadline, signal: ex.signal(), timing: ex.timing }, legacy ? null : queryThreshold);
    const threshold = appliedThreshold(model, legacy ? null : queryThreshold);
    ex.notes.detection = analysis.detection;
    ex.notes.modelVersion = model.version;
    const metadata = legacy ? null : { version: ctx.service.version, build_number: ctx.buildNumber };
    return fromAnalysis(analysis, threshold, { success: legacy ? null : threshold, failure: reported }, model.manifest.name, metadata);
  } catch (error) {
    if (!(error instanceof ImageError)) throw error;
    if (error.code === 'invalid_base64') return failure(`Error: ${v1Base64Message(error.base64, error.message)}`, reported);
    if (error.code === 'undecodable' || error.code === 'empty_image') return failure(V1_MESSAGES.loadError, reported);
    return failure(`Error: ${error.message}`, reported);
  }
}

function keyFingerprint(key: string): string {
  return createHash('sha256').update(key).digest('hex').slice(0, 12);
}

function invocation(ctx: V1Context, variant: Variant) {
  const { service } = ctx;
  return (ex: Exchange): void => {
    const headers = variant.legacy ? ctx.deprecationHeaders : {};
    const key = ex.header('api-key');
    if (!service.keys.check(key)) return sendFailure(ex, new ApiError('unauthorized'), headers);
    ex.notes.model = variant.modelId;
    if (variant.legacy) log.info('deprecated model used', { model: variant.modelId, key_fingerprint: keyFingerprint(key!) });
    const deadline = performance.now() + service.config.requestTimeoutMs;
    const errors: V1Detail[] = [];
    const threshold = variant.legacy ? null : validateThreshold(queryParam(ex.query, 'threshold'), errors);
    // FastAPI reads a body of another media type as not-JSON: the model then sees a string.
    const jsonBody = isJsonContentType(ex.header('content-type'));
    ex.readBody(service.config.maxBodyBytes)
      .then(async (raw) => {
        const parsed = jsonBody ? parseV1Body(raw) : raw.length === 0 ? undefined : raw.toString('utf8');
        const request = validateV1Body(parsed, errors);
        if (errors.length > 0 || request === null) throw new V1ValidationError(errors);
        if (request.mediaType === 'video') {
          if (!variant.legacy) return json(ex, 400, { detail: VIDEO_ON_IMAGE_ENDPOINT }, headers);
          return json(ex, 200, await analyzeVideo(service, variant.modelId, request, ex, deadline, ctx.ffmpegSlots), headers);
        }
        json(ex, 200, await analyzeImage(ctx, variant, request, threshold, ex, deadline), headers);
      })
      .catch((error: unknown) => sendFailure(ex, error, headers));
  };
}

function keyed(service: Service, handler: (ex: Exchange) => void) {
  return (ex: Exchange): void => {
    const key = ex.header('api-key') ?? queryParam(ex.query, 'api_key') ?? undefined;
    if (!service.keys.check(key)) return sendFailure(ex, new ApiError('unauthorized'), {});
    handler(ex);
  };
}

// The docs page forwards the key it was opened with (?api_key=...) on its own requests,
// read from the page URL at run time so the key is never written into the HTML.
const forwardKey = `(req) => { const k = new URLSearchParams(location.search).get('api_key'); if (k && !req.headers['api-key']) req.headers['api-key'] = k; return req; }`;

/** The v1 interface (and bc-legacy): its routes on the public port. */
export function v1Interface(service: Service): ServiceInterface {
  return routesInterface(({ router }) => registerV1(router, service));
}

function registerV1(router: Router, service: Service): void {
  if (!service.registry.get('bc-v1') || !service.registry.get('bc-legacy')) throw new Error('v1 needs the bc-v1 and bc-legacy packs');
  const ctx: V1Context = {
    service,
    ffmpegSlots: new Semaphore(service.config.video.concurrency),
    buildNumber: service.config.buildNumber,
    deprecationHeaders: deprecationHeaders(service.config.legacy),
  };
  const ops = v1Operations(service.version, exampleImageBase64());
  const doc = (operation: Record<string, unknown>) => ({ document: 'v1' as const, operation });
  const docs = swaggerPage('Cat Comfort API v1 (legacy)', '/openapi.json', '/docs', forwardKey);
  router
    .add('POST', '/invocations', invocation(ctx, { modelId: service.config.defaultModel, legacy: false }), doc(ops.invocations))
    .add('POST', '/invocations/bc-v1', invocation(ctx, { modelId: 'bc-v1', legacy: false }), doc(ops.invocationsBcV1))
    .add('POST', '/invocations/bc-legacy', invocation(ctx, { modelId: 'bc-legacy', legacy: true }), doc(ops.invocationsBcLegacy))
    .add('GET', '/ping', keyed(service, (ex) => json(ex, 200, { status: 'healthy', service: 'cat-comfort-detection' })), doc(ops.ping));
  const openapi = JSON.stringify(buildV1OpenApi(service.version, router.paths('v1')));
  router
    .add('GET', '/openapi.json', keyed(service, (ex) => ex.send(200, { 'Content-Type': 'application/json' }, openapi)))
    .add('GET', '/docs', keyed(service, (ex) => ex.send(200, { 'Content-Type': 'text/html; charset=utf-8' }, docs)));
  for (const name of ['swagger-ui.css', 'swagger-ui-bundle.js']) {
    const asset = service.docsAssets[name]!;
    router.add('GET', `/docs/${name}`, (ex) => ex.send(200, { 'Content-Type': asset.contentType, 'Cache-Control': 'public, max-age=3600' }, asset.body));
  }
}

/** RFC 9745 `Deprecation` (and RFC 8594 `Sunset` when configured) for bc-legacy responses. */
function deprecationHeaders(legacy: Service['config']['legacy']): Record<string, string> {
  const headers: Record<string, string> = {
    Deprecation: `@${Math.floor(legacy.deprecatedSince.getTime() / 1000)}`,
    Link: '</v2/docs>; rel="successor-version"',
  };
  if (legacy.sunset) headers.Sunset = legacy.sunset.toUTCString();
  return headers;
}
