// The Open Inference Protocol over HTTP (docs/oip.md "Open Inference Protocol"), beside our own /v2 API:
// server and model metadata, health and readiness, and infer with JSON or binary tensor data
// (`Inference-Header-Content-Length`: the JSON header, then each binary tensor's bytes in order).
// Errors are the protocol's `{"error": message}` with our code, details and request id inside.
import type { Exchange } from '../http/exchange';
import { isJsonContentType } from '../http/content-type';
import { exampleImageBase64 } from '../http/docs/example-image';
import { ApiError, requestIdFrom } from '../errors';
import { parseJsonObject } from '../http/json-body';
import { sendError, sendJson } from '../http/respond';
import type { Router } from '../http/router';
import type { Readiness } from '../ops/readiness';
import { routesInterface, type Service, type ServiceInterface } from '../service';
import { inferRestAnswer } from './answer-json';
import { infer } from './infer';
import { HEADER_LENGTH, parseInferRequest, splitBody } from './infer-request';
import { modelMetadata, modelReady, serverMetadata } from './metadata';
import { oipError } from './error-body';
import { OIP_HEALTH_OPERATIONS, oipOperations } from './openapi';

/** Answered before readiness and while draining, without a key (orchestrators' probes). */
export const OIP_HEALTH_PATHS: ReadonlySet<string> = new Set(['/v2/health/live', '/v2/health/ready']);

/** The protocol's paths besides health, known before their routes are (they are added once the packs load). */
const MODEL_PATTERNS = {
  server: '/v2',
  metadata: '/v2/models/:model_id',
  metadataVersion: '/v2/models/:model_id/versions/:version',
  ready: '/v2/models/:model_id/ready',
  readyVersion: '/v2/models/:model_id/versions/:version/ready',
  infer: '/v2/models/:model_id/infer',
  inferVersion: '/v2/models/:model_id/versions/:version/infer',
};

/** A route of the protocol, in the v2 document. */
function addOipRoute(router: Router, method: string, pattern: string, handler: (ex: Exchange) => void, operation: Record<string, unknown>): void {
  router.add(method, pattern, handler, { document: 'v2', operation });
}

/**
 * The health routes, and the protocol's error shape on all its paths from the start: the HTTP
 * front's and the router's refusals too (503 while the packs load, 400, 405, 413).
 */
export function registerOipHealth(router: Router, readiness: Readiness): void {
  for (const pattern of ['/v2/health/live', '/v2/health/ready', ...Object.values(MODEL_PATTERNS)]) router.mountRoute(pattern, oipError);
  const live = (ex: Exchange) => sendJson(ex, requestIdFrom(ex.header('x-request-id')), 200, { live: true }, { 'Cache-Control': 'no-store' });
  addOipRoute(router, 'GET', '/v2/health/live', live, OIP_HEALTH_OPERATIONS.live);
  addOipRoute(
    router,
    'GET',
    '/v2/health/ready',
    (ex) => {
      const ready = readiness.ready;
      const headers = { 'Cache-Control': 'no-store', ...(ready ? {} : { 'Retry-After': '1' }) };
      sendJson(ex, requestIdFrom(ex.header('x-request-id')), ready ? 200 : 503, { ready }, headers);
    },
    OIP_HEALTH_OPERATIONS.ready,
  );
}

type Handler = (ex: Exchange, requestId: string) => Promise<void> | void;

function authed(service: Service, handler: Handler) {
  return (ex: Exchange): void => {
    const requestId = requestIdFrom(ex.header('x-request-id'));
    if (!service.keys.check(ex.header('api-key'))) return sendError(ex, oipError, requestId, new ApiError('unauthorized'));
    if (ex.params.model_id) ex.notes.model = ex.params.model_id;
    try {
      const done = handler(ex, requestId);
      if (done) done.catch((error: unknown) => sendError(ex, oipError, requestId, error));
    } catch (error) {
      sendError(ex, oipError, requestId, error);
    }
  };
}

/** The protocol's REST interface: its routes besides health on the public port. */
export function oipRestInterface(service: Service): ServiceInterface {
  return routesInterface(({ router, readiness }) => registerOip(router, service, readiness));
}

function registerOip(router: Router, service: Service, readiness: Readiness): void {
  const { registry } = service;
  const metadata = (ex: Exchange, requestId: string) => sendJson(ex, requestId, 200, modelMetadata(registry, ex.params.model_id!, ex.params.version));
  const ready = (ex: Exchange, requestId: string) => {
    const isReady = modelReady(registry, readiness.ready, ex.params.model_id!, ex.params.version);
    sendJson(ex, requestId, isReady ? 200 : 503, { name: ex.params.model_id, ready: isReady });
  };
  const inferRoute = (ex: Exchange, requestId: string) => inferHttp(ex, requestId, service);
  const ops = oipOperations(service.version, exampleImageBase64());
  const routes: Array<[string, string, Handler, Record<string, unknown>]> = [
    ['GET', MODEL_PATTERNS.server, (ex, requestId) => sendJson(ex, requestId, 200, serverMetadata(service.version)), ops.serverMetadata],
    ['GET', MODEL_PATTERNS.metadata, metadata, ops.modelMetadata],
    ['GET', MODEL_PATTERNS.metadataVersion, metadata, ops.modelMetadataVersion],
    ['GET', MODEL_PATTERNS.ready, ready, ops.modelReady],
    ['GET', MODEL_PATTERNS.readyVersion, ready, ops.modelReadyVersion],
    ['POST', MODEL_PATTERNS.infer, inferRoute, ops.infer],
    ['POST', MODEL_PATTERNS.inferVersion, inferRoute, ops.inferVersion],
  ];
  for (const [method, pattern, handler, operation] of routes) addOipRoute(router, method, pattern, authed(service, handler), operation);
}

async function inferHttp(ex: Exchange, requestId: string, service: Service): Promise<void> {
  const headerLength = ex.header(HEADER_LENGTH);
  if (headerLength === undefined && !isJsonContentType(ex.header('content-type'))) {
    throw new ApiError('unsupported_media_type', `Content-Type must be application/json, or send binary tensor data with ${HEADER_LENGTH}.`);
  }
  const deadline = performance.now() + service.config.requestTimeoutMs;
  const body = await ex.readBody(service.config.maxBodyBytes, true);
  const { json, binary } = splitBody(body, headerLength);
  const request = parseInferRequest(parseJsonObject(json), binary, ex.params.model_id!, ex.params.version);
  const answer = await infer(service.registry, request.call, { deadline, signal: ex.signal(), timing: ex.timing });
  ex.notes.modelVersion = answer.version;
  const { headers, body: answerBody } = inferRestAnswer(answer, request.binaryOutputs, requestId);
  ex.send(200, headers, answerBody);
}

