// The Open Inference Protocol over HTTP (docs/oip.md "Open Inference Protocol"), beside our own /v2 API:
// server and model metadata, health and readiness, and infer with JSON or binary tensor data
// (`Inference-Header-Content-Length`: the JSON header, then each binary tensor's bytes in order).
// Errors are the protocol's `{"error": message}` with our code, details and request id inside.
import type { Exchange } from '../http/exchange';
import { isJsonContentType } from '../http/content-type';
import { exampleImageBase64 } from '../http/docs/example-image';
import { ApiError, requestIdFrom, validationError, type FieldError } from '../errors';
import { parseJsonObject } from '../http/json-body';
import { sendError, sendJson, sendJsonText } from '../http/respond';
import type { Router } from '../http/router';
import type { AnalyzeItem } from '../native/addon';
import type { Readiness } from '../ops/readiness';
import { routesInterface, type Service, type ServiceInterface } from '../service';
import { splitBytesElements } from './bytes-elements';
import { inferAnswerParts } from './answer-json';
import { infer, type InferCall, type InferInput } from './infer';
import { modelMetadata, modelReady, serverMetadata } from './metadata';
import { oipError } from './error-body';
import { OIP_HEALTH_OPERATIONS, oipOperations } from './openapi';

/** Answered before readiness and while draining, without a key (orchestrators' probes). */
export const OIP_HEALTH_PATHS: ReadonlySet<string> = new Set(['/v2/health/live', '/v2/health/ready']);

const HEADER_LENGTH = 'inference-header-content-length';

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
  const binaryOutputs = new Set(request.binaryOutputs === 'all' ? answer.outputs.map((o) => o.name) : request.binaryOutputs);
  const parts = inferAnswerParts(answer, binaryOutputs);
  if (parts.tail.length === 0) return sendJsonText(ex, requestId, 200, parts.json);
  const head = Buffer.from(parts.json, 'utf8');
  ex.send(
    200,
    { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(head.length), 'X-Request-ID': requestId },
    Buffer.concat([head, ...parts.tail]),
  );
}

function splitBody(body: Buffer, headerLength: string | undefined): { json: Buffer; binary: Buffer } {
  if (headerLength === undefined) return { json: body, binary: Buffer.alloc(0) };
  const length = /^\d{1,15}$/.test(headerLength) ? Number(headerLength) : NaN;
  if (!(length <= body.length)) {
    throw new ApiError('bad_request', `${HEADER_LENGTH} must be a whole number of bytes no larger than the body (${body.length}).`, { header: HEADER_LENGTH });
  }
  return { json: body.subarray(0, length), binary: body.subarray(length) };
}

interface ParsedRequest {
  call: InferCall;
  /** Outputs to send as binary data: named ones, or all (`binary_data_output`). */
  binaryOutputs: string[] | 'all';
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The request's JSON header and binary tail as a protocol-neutral call; malformed structure is a 422 naming the field. */
function parseInferRequest(body: Record<string, unknown>, binary: Buffer, model: string, version: string | undefined): ParsedRequest {
  const errors: FieldError[] = [];
  const parameters = isObject(body.parameters) ? body.parameters : {};
  if (body.parameters !== undefined && !isObject(body.parameters)) errors.push({ field: 'parameters', message: 'Must be an object.' });
  if (body.id !== undefined && typeof body.id !== 'string') errors.push({ field: 'id', message: 'Must be a string.' });
  if (!Array.isArray(body.inputs)) errors.push({ field: 'inputs', message: 'Field required: an array of input tensors.' });
  let offset = 0;
  const inputs: InferInput[] = (Array.isArray(body.inputs) ? body.inputs : []).map((raw: unknown, i): InferInput => {
    const field = `inputs[${i}]`;
    const t = isObject(raw) ? raw : {};
    if (!isObject(raw)) errors.push({ field, message: 'Must be an object.' });
    if (typeof t.name !== 'string') errors.push({ field: `${field}.name`, message: 'Field required: a string.' });
    if (typeof t.datatype !== 'string') errors.push({ field: `${field}.datatype`, message: 'Field required: a string.' });
    const shape = Array.isArray(t.shape) && t.shape.every((d) => Number.isInteger(d)) ? (t.shape as number[]) : null;
    if (!shape) errors.push({ field: `${field}.shape`, message: 'Field required: an array of integers.' });
    const tensorParameters = isObject(t.parameters) ? t.parameters : {};
    let items: AnalyzeItem[] | null = null;
    if (tensorParameters.binary_data_size !== undefined) {
      const size = tensorParameters.binary_data_size;
      if (!Number.isInteger(size) || (size as number) < 0 || offset + (size as number) > binary.length) {
        errors.push({ field: `${field}.parameters.binary_data_size`, message: `Must be a whole number of bytes within the ${binary.length} bytes after the JSON header.` });
      } else {
        const elements = t.datatype === 'BYTES' ? splitBytesElements(binary.subarray(offset, offset + (size as number))) : null;
        if (t.datatype === 'BYTES' && !elements) {
          errors.push({ field: `${field}.parameters.binary_data_size`, message: 'BYTES data must be elements of a 4-byte little-endian length and that many bytes.' });
        }
        items = elements && elements.map((data) => ({ data, encoding: 'bytes' }));
        offset += size as number;
      }
    } else if (t.data !== undefined) {
      if (t.datatype === 'BYTES' && !(Array.isArray(t.data) && t.data.every((d) => typeof d === 'string'))) {
        errors.push({ field: `${field}.data`, message: 'BYTES data in JSON must be an array of strings, each an image in base64.' });
      } else if (Array.isArray(t.data) && t.datatype === 'BYTES') {
        items = (t.data as string[]).map((data) => ({ data, encoding: 'base64-strict' }));
      }
    }
    return { name: String(t.name), datatype: String(t.datatype), shape: shape ?? [], items };
  });
  if (offset !== binary.length) errors.push({ field: 'inputs', message: `The binary_data_size of the inputs add up to ${offset} bytes; ${binary.length} follow the JSON header.` });
  const outputs = body.outputs === undefined ? null : Array.isArray(body.outputs) ? body.outputs : null;
  if (body.outputs !== undefined && outputs === null) errors.push({ field: 'outputs', message: 'Must be an array of requested outputs.' });
  const binaryOutputs: string[] = [];
  const names = (outputs ?? []).map((raw: unknown, i) => {
    const o = isObject(raw) ? raw : {};
    if (typeof o.name !== 'string') errors.push({ field: `outputs[${i}].name`, message: 'Field required: a string.' });
    if (isObject(o.parameters) && o.parameters.binary_data === true) binaryOutputs.push(String(o.name));
    return String(o.name);
  });
  if (errors.length > 0) throw validationError(errors);
  return {
    call: { model, version, id: (body.id as string | undefined) ?? '', inputs, outputs: outputs && names, threshold: parameters.threshold },
    binaryOutputs: parameters.binary_data_output === true ? 'all' : binaryOutputs,
  };
}
