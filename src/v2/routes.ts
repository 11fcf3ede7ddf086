// The v2 routes. The synchronous prelude (request id, key, content type, body read) runs in the
// handler, before the body is handed over (http/exchange.ts readBody); the rest is async.
import type { Exchange } from '../http/exchange';
import { isJsonContentType } from '../http/content-type';
import { redocPage, swaggerPage } from '../http/docs/pages';
import { exampleImageBase64 } from '../http/docs/example-image';
import { ApiError, requestIdFrom } from '../errors';
import { errorResponse } from '../http/error-answers';
import type { Router } from '../http/router';
import { routesInterface, type Service, type ServiceInterface } from '../service';
import { parseJsonObjectWithImage } from '../http/json-body';
import { IMAGE_MEMBER } from '../http/json-image';
import { sendError, sendJson } from '../http/respond';
import { modelSummary } from './model-summary';
import { buildV2OpenApi, v2Operations, type DocumentAddition } from './openapi';
import { predict } from './predict';
import { predictOptions } from './predict-options';
import { PackNotLoadedError } from '../pipeline/analysis';
import { cpuFeatures } from '../native/cpu-features';
import { eventLoopFigures } from '../ops/event-loop';
import { stageSummaries } from '../ops/stage-summary';

type Work = (requestId: string) => Promise<{ status: number; body: unknown }>;

function run(ex: Exchange, requestId: string, work: Promise<{ status: number; body: unknown }>): void {
  work.then(
    (result) => sendJson(ex, requestId, result.status, result.body),
    (error: unknown) => sendError(ex, errorResponse, requestId, error),
  );
}

/** Authenticated JSON GET. */
function authedGet(service: Service, work: Work) {
  return (ex: Exchange): void => {
    const requestId = requestIdFrom(ex.header('x-request-id'));
    if (!service.keys.check(ex.header('api-key'))) return sendError(ex, errorResponse, requestId, new ApiError('unauthorized'));
    run(ex, requestId, work(requestId));
  };
}

function predictRoute(service: Service, modelFrom: (ex: Exchange) => string) {
  return (ex: Exchange): void => {
    const requestId = requestIdFrom(ex.header('x-request-id'));
    if (!service.keys.check(ex.header('api-key'))) return sendError(ex, errorResponse, requestId, new ApiError('unauthorized'));
    const modelId = modelFrom(ex);
    // Checked before the body is read; a pack unloaded meanwhile is found by the pick (routed.ts).
    if (!service.registry.get(modelId)) return sendError(ex, errorResponse, requestId, new PackNotLoadedError(modelId));
    ex.notes.model = modelId;
    if (!isJsonContentType(ex.header('content-type'))) {
      return sendError(ex, errorResponse, requestId, new ApiError('unsupported_media_type'));
    }
    const deadline = performance.now() + service.config.requestTimeoutMs;
    const body = ex.readBody(service.config.maxBodyBytes, true);
    run(
      ex,
      requestId,
      body.then(async (raw) => {
        const opts = predictOptions(ex.query);
        const response = await predict({ serviceVersion: service.version }, service.registry, modelId, parseJsonObjectWithImage(raw, IMAGE_MEMBER), requestId, {
          deadline,
          signal: ex.signal(),
          timing: ex.timing,
        }, opts);
        ex.notes.detection = response.detection;
        ex.notes.modelVersion = response.model.pack_version;
        return { status: 200, body: response };
      }),
    );
  };
}

function staticRoute(body: string | Buffer, contentType: string) {
  return (ex: Exchange): void =>
    ex.send(200, { 'Content-Type': contentType, 'Cache-Control': 'public, max-age=3600', 'X-Request-ID': requestIdFrom(ex.header('x-request-id')) }, body);
}

/** GET /v2/stream that reached the router: not a WebSocket upgrade the front hands over (front/upgrade-relay.ts), or streams are off. */
function streamNotUpgraded(streamsOn: boolean): ApiError {
  if (!streamsOn) return new ApiError('unavailable', 'Live streams are off on this service (CATCOMFORT_STREAM_MAX_CONNECTIONS=0).');
  return new ApiError('bad_request', 'GET /v2/stream is a WebSocket: ask with Upgrade: websocket and Connection: Upgrade over HTTP/1.1 (docs/api-v2.md "Live stream").');
}

/**
 * The v2 interface: its routes on the public port. `additions`: other interfaces' operations on /v2
 * paths, documented here too (the document is built on first request, once every route is in).
 */
export function v2Interface(service: Service, additions: DocumentAddition[] = []): ServiceInterface {
  return routesInterface(({ router }) => registerV2(router, service, additions));
}

function registerV2(router: Router, service: Service, additions: DocumentAddition[]): void {
  const ops = v2Operations(service.version, exampleImageBase64());
  let openapi: ((ex: Exchange) => void) | null = null;
  const doc = (operation: Record<string, unknown>) => ({ document: 'v2' as const, operation });
  router
    .add('POST', '/v2/predict', predictRoute(service, () => service.config.defaultModel), doc(ops.predict))
    .add('POST', '/v2/models/:model_id/predict', predictRoute(service, (ex) => ex.params.model_id!), doc(ops.predictWithModel))
    .add(
      'GET',
      '/v2/models',
      authedGet(service, async (requestId) => ({
        status: 200,
        body: {
          request_id: requestId,
          models: service.registry.all().map((pack) => ({
            ...modelSummary(service.version, pack.current),
            versions: pack.list().map((v) => ({ pack_version: v.model.version, role: v.role, share: v.share, since: new Date(v.since).toISOString() })),
          })),
        },
      })),
      doc(ops.listModels),
    )
    .add(
      'GET',
      '/v2/stats',
      authedGet(service, async (requestId) => ({
        status: 200,
        body: {
          request_id: requestId,
          simulatedDevice: service.registry.simulatedDevice(),
          eventLoop: eventLoopFigures(),
          models: Object.fromEntries(
            service.registry.all().map((pack) => {
              const m = pack.current;
              const versions = pack.list().map((v) => {
                const { submitted, completed, queued, inFlight } = v.model.batcher.stats();
                return { pack_version: v.model.version, role: v.role, share: v.share, submitted, completed, queued, inFlight };
              });
              const batching = { ...m.batchingInEffect(), poolThreads: service.config.poolThreads };
              return [pack.id, { ...m.batcher.stats(), batching, stages: stageSummaries(pack.id), precision: m.precision, precisionReason: m.precisionReason, cpuFeatures: cpuFeatures(), sessionBatches: m.sessionBatches(), lowLoad: m.lowLoad, sessionBatchTimings: m.sizeTimings(), hostMemory: m.hostMemory(), versions }];
            }),
          ),
        },
      })),
      doc(ops.stats),
    )
    .add('GET', '/v2/stream', (ex) => sendError(ex, errorResponse, requestIdFrom(ex.header('x-request-id')), streamNotUpgraded(service.config.stream.maxConnections > 0)))
    .add('GET', '/', (ex) => ex.send(302, { Location: '/v2/docs', 'Content-Type': 'text/plain; charset=utf-8' }, 'The API documentation is at /v2/docs\n'))
    .add('GET', '/v2/openapi.json', (ex) => (openapi ??= staticRoute(JSON.stringify(buildV2OpenApi(service.version, router.paths('v2'), additions)), 'application/json'))(ex))
    .add('GET', '/v2/docs', staticRoute(swaggerPage('Cat Comfort API v2', '/v2/openapi.json', '/v2/docs'), 'text/html; charset=utf-8'))
    .add('GET', '/v2/redoc', staticRoute(redocPage('Cat Comfort API v2', '/v2/openapi.json', '/v2/redoc'), 'text/html; charset=utf-8'));
  for (const [name, asset] of Object.entries(service.docsAssets)) {
    const base = name.startsWith('redoc') ? '/v2/redoc' : '/v2/docs';
    router.add('GET', `${base}/${name}`, staticRoute(asset.body, asset.contentType));
  }
}
