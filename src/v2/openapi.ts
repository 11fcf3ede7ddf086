// The v2 OpenAPI 3.1 document, generated from the TypeBox schemas that validate requests,
// with examples taken from real answers and the example photo as the request example.
import type { TSchema } from '@sinclair/typebox';
import { MAX_BODY_BYTES } from '../config/settings';
import { COMMON_ERRORS, errorResponses, payloadTooLarge, type ErrorDoc, type V2ErrorKind } from '../http/docs/openapi-errors';
import { API_KEY_SCHEME, EXAMPLE_REQUEST_ID, jsonContent, openApiDocument } from '../http/docs/openapi-util';
import { errorTable, type ErrorKind } from '../errors';
import { HTTP_STATUS } from '../http/error-answers';
import { PredictExplanation } from './explain-schema';
import { ErrorResponse, ModelList, PredictRequest, PredictResponse, StatsResponse } from './schemas';

/** An error v2 can answer; scan-only kinds do not type-check here. */
interface V2ErrorDoc extends ErrorDoc {
  kind: V2ErrorKind;
}

const requestIdHeader = {
  name: 'X-Request-ID',
  in: 'header',
  required: false,
  description:
    'Client-chosen request ID: 1-128 characters of `A-Z a-z 0-9 . _ : -`. Other values are replaced by a generated UUID. Echoed in the body and the `X-Request-ID` response header.',
  schema: { type: 'string', maxLength: 128, pattern: '^[A-Za-z0-9._:-]{1,128}$' },
  example: 'checkout-42',
};

const responseHeaders = {
  'X-Request-ID': { description: 'The request ID, equal to `request_id` in the body', schema: { type: 'string' } },
};

const unauthorized: V2ErrorDoc = { kind: 'unauthorized', when: 'missing or invalid `api-key`' };
const { internal, queueFull } = COMMON_ERRORS;
const unavailable: V2ErrorDoc = { kind: 'unavailable', when: 'the service is shutting down', message: 'The service is shutting down.' };

const predictErrors: V2ErrorDoc[] = [
  {
    kind: 'invalid_image',
    when: '`Image is not valid base64.`, `Image is empty.`, `Image could not be decoded.`, `Unsupported pixel format; send an 8-bit image.`, or `Image is too large; at most N pixels.`',
  },
  { kind: 'bad_request', when: 'malformed `Content-Length`', message: 'Invalid Content-Length header.' },
  unauthorized,
  payloadTooLarge(MAX_BODY_BYTES),
  { kind: 'unsupported_media_type', when: 'Content-Type is not `application/json`' },
  {
    kind: 'invalid_request',
    when: 'body missing or malformed, `image` missing, or invalid `threshold`. `details.errors` lists `{field, message}`; submitted values are never echoed.',
    details: { errors: [{ field: 'image', message: 'Field required' }] },
  },
  queueFull,
  internal,
  unavailable,
];

const modelNotFound: V2ErrorDoc = {
  kind: 'model_not_found',
  when: 'unknown `model_id`; `details.model_id` names it',
  details: { model_id: 'bc-v9' },
};

function predictExamples(version: string) {
  const detected = {
    request_id: EXAMPLE_REQUEST_ID,
    model: { id: 'bc-v1', version, pack_version: '1.3.0' },
    detection: 'detected',
    prediction: { label: 'discomfort', score: 0.319968, threshold: 0.3 },
    cat: { bounding_box: { x_min: 1, y_min: 0, x_max: 158, y_max: 106 }, detection_confidence: 0.943509 },
    image: { width: 160, height: 106 },
  };
  return {
    detected: {
      summary: 'A cat was found and classified (the example photo with bc-v1)',
      value: detected,
    },
    explained: {
      summary: 'The same cat with `explain=true`: the usual keys, then `explanation`',
      value: {
        ...detected,
        explanation: {
          candidates: [
            {
              bounding_box: { x_min: 1, y_min: 0, x_max: 158, y_max: 106 },
              detection_confidence: 0.943509,
              raw_score: 0.884209,
              outcome: 'chosen',
              verifier: { lookalike_mass: 0.153815, cat_mass: 0.839745, dog_mass: 0.000008, passed: true },
            },
          ],
          cutoffs: { detected: 0.69, low_confidence: 0.5 },
          verifier: { checked: 1, max_candidates: 3, max_lookalike_mass: 0.7 },
        },
      },
    },
    not_detected: {
      summary: 'No cat in the photo',
      value: {
      request_id: EXAMPLE_REQUEST_ID,
        model: { id: 'bc-v1', version, pack_version: '1.3.0' },
        detection: 'not_detected',
      prediction: null,
      cat: null,
        image: { width: 640, height: 480 },
      },
    },
  };
}

/** Opt-ins of the predict operations: without them the answer is exactly the PredictResponse it was. */
const optInParameters = [
  {
    name: 'explain',
    in: 'query',
    required: false,
    description:
      '`true`: the answer also carries `explanation` (PredictExplanation): the candidate the pipeline reported with its detector scores, the verifier\'s reading and the outcome, and the pack\'s cutoffs. Used by the inspection page (`/inspect`)',
    schema: { type: 'boolean', default: false },
  },
  {
    name: 'pack_version',
    in: 'query',
    required: false,
    description:
      'A loaded version of the model to answer (`GET /v2/models` lists them): the serving one, the canary, or the shadow (which then answers by itself). Omitted: the serving version, or the canary for its share. A version loaded as standby or previous gets 404 `model_not_found`',
    schema: { type: 'string', minLength: 1 },
    example: '1.3.0',
  },
];

/** PredictResponse, and `explanation` when asked for (the PredictResponse schema itself is unchanged). */
const explainedSchema = {
  allOf: [
    { $ref: '#/components/schemas/PredictResponse' },
    { type: 'object', properties: { explanation: { $ref: '#/components/schemas/PredictExplanation' } } },
  ],
};

function predictOperation(operationId: string, summary: string, withModel: boolean, exampleImage: string, version: string): Record<string, unknown> {
  return {
    operationId,
    summary,
    tags: ['Prediction'],
    security: [{ ApiKeyAuth: [] }],
    parameters: [
      ...(withModel
        ? [{ name: 'model_id', in: 'path', required: true, description: 'Model identifier, e.g. `bc-v1`', schema: { type: 'string' }, example: 'bc-v1' }]
        : []),
      requestIdHeader,
      ...optInParameters,
    ],
    requestBody: {
      required: true,
      content: jsonContent('PredictRequest', {
        cat: { summary: 'A 160x106 JPEG of a cat (the model default threshold applies)', value: { image: exampleImage } },
        threshold: { summary: 'The same photo with a threshold of 0.5', value: { image: exampleImage, threshold: 0.5 } },
      }),
    },
    responses: {
      '200': {
        description: 'Analysis result; with `explain=true` it also carries `explanation`',
        headers: responseHeaders,
        content: { 'application/json': { schema: explainedSchema, examples: predictExamples(version) } },
      },
      ...errorResponses(withModel ? [...predictErrors, modelNotFound] : predictErrors),
    },
  };
}

function getOperation(operationId: string, summary: string, description: string, ok: Record<string, unknown>): Record<string, unknown> {
  return {
    operationId,
    summary,
    description,
    tags: ['Models and service'],
    security: [{ ApiKeyAuth: [] }],
    parameters: [requestIdHeader],
    responses: { '200': ok, ...errorResponses([unauthorized, internal, unavailable]) },
  };
}

const statsExample = {
  request_id: EXAMPLE_REQUEST_ID,
  simulatedDevice: null,
  eventLoop: { utilization: 0.213, mainThreadUsPerRequest: 812, gcShare: 0.31, windowS: 10, busySeconds: 41.2, mainThreadCpuSeconds: 44.9, gcSeconds: 13.9, requests: 5210 },
  models: {
    'bc-v1': {
      submitted: 4,
      completed: 4,
      batches: 4,
      batchSizes: [0, 4, 0, 0, 0],
      queueTimeUsTotal: 1201.9,
      queueTimeUsMax: 813.7,
      rejectedFull: 0,
      expired: 0,
      aborted: 0,
      queued: 0,
      inFlight: 0,
      batching: { maxBatchSize: 4, maxQueueDelayUs: 500, maxQueue: 64, maxInFlight: 2, poolThreads: 2, chosenBy: 'cpu rule' },
      stages: {
        read: { count: 4, meanMs: 0.41, p50Ms: 0.39, p99Ms: 0.52 },
        queue: { count: 4, meanMs: 0.3, p50Ms: 0.28, p99Ms: 0.81 },
        decode: { count: 4, meanMs: 3.1, p50Ms: 3.05, p99Ms: 3.6 },
        detect: { count: 4, meanMs: 9.8, p50Ms: 9.7, p99Ms: 10.4 },
        crop: { count: 4, meanMs: 0.6, p50Ms: 0.6, p99Ms: 0.7 },
        classify: { count: 4, meanMs: 5.2, p50Ms: 5.1, p99Ms: 5.6 },
        loop: { count: 4, meanMs: 0.12, p50Ms: 0.11, p99Ms: 0.2 },
        convert: { count: 4, meanMs: 0.09, p50Ms: 0.08, p99Ms: 0.12 },
      },
      precision: 'int8',
      precisionReason: 'self-check passed: 4 photos, same states, largest difference 0.012 (tolerance 0.05)',
      cpuFeatures: ['AVX2', 'AVX-512', 'AVX-512 VNNI'],
      sessionBatches: { detector: [{ batch: 1, runs: 28, padRows: 0, lowLoadRuns: 11 }], classifier: [{ batch: 1, runs: 14, padRows: 0, lowLoadRuns: 6 }] },
      lowLoad: { threads: 2, maxInFlight: 1 },
      sessionBatchTimings: { detector: [{ batch: 1, msPerImage: 6.412, kept: true }], classifier: [{ batch: 1, msPerImage: 3.905, kept: true }] },
      hostMemory: { detector: 'cpu', classifier: 'cpu' },
      versions: [
        { pack_version: '1.3.0', role: 'serving', share: 0, submitted: 4, completed: 4, queued: 0, inFlight: 0 },
        { pack_version: '2.0.0', role: 'canary', share: 0.1, submitted: 0, completed: 0, queued: 0, inFlight: 0 },
      ],
    },
  },
};

/** sha256 of bc-v1's int8 backbone (the ONNX Model Zoo's MobileNetV2 requantized with 7-bit weights). */
const INT8_BACKBONE_SHA256 = '8c9b4bd0352e0319116f636cb0cc95b1602a3f82d5853160a7f7ac2eec045f5b';

function modelsExample(version: string) {
  return {
    request_id: EXAMPLE_REQUEST_ID,
    models: [
      { id: 'bc-legacy', name: 'BC-Legacy', version, pack_version: '1.0.0', default_threshold: 0.5, deprecated: true, detector: { precision: 'fp32', available_precisions: ['fp32'], precision_reason: 'the pack has no int8 form' }, classifier: { trained: false, backbone: null, training: null }, verifier: null, versions: [{ pack_version: '1.0.0', role: 'serving', share: 0, since: '2026-11-25T21:40:00.000Z' }] },
      {
        id: 'bc-v1',
        name: 'BC-V1',
        version,
        pack_version: '1.3.0',
        default_threshold: 0.3,
        deprecated: false,
        detector: { precision: 'int8', available_precisions: ['fp32', 'int8'], precision_reason: 'self-check passed: 4 photos, same states, largest difference 0.012 (tolerance 0.05)' },
        classifier: { trained: false, backbone: { name: 'imagenet-mobilenetv2', file: 'mobilenetv2-12.int8-7bit.onnx', sha256: INT8_BACKBONE_SHA256, precision: 'int8' }, training: null },
        verifier: {
          file: 'mobilenetv2-12.int8-7bit.onnx',
          sha256: INT8_BACKBONE_SHA256,
          max_candidates: 3,
          rule: {
            lookalike_classes: { 'wild cats (cougar, lynx, leopard, snow leopard, jaguar, lion, tiger, cheetah)': [[286, 293]], 'wolves, wild dogs, hyena, foxes': [[269, 280]], 'teddy bear': [850] },
            max_lookalike_mass: 0.7,
            cat_classes: { 'tabby, tiger cat, Persian, Siamese, Egyptian cat': [[281, 285]] },
            dog_classes: { dogs: [[151, 268]] },
          },
        },
        versions: [
          { pack_version: '1.3.0', role: 'serving', share: 0, since: '2026-11-25T21:40:00.000Z' },
          { pack_version: '2.0.0', role: 'canary', share: 0.1, since: '2026-11-25T21:52:10.114Z' },
        ],
      },
    ],
  };
}

/** Codes any request can get from the HTTP layer before it reaches an operation. */
const protocolCodes = ['bad_request', 'not_found', 'method_not_allowed', 'request_timeout', 'uri_too_long', 'header_too_large', 'not_implemented', 'http_version_not_supported'] as const;

/** The operations of the v2 routes (src/v2/routes.ts registers each with its route). */
export function v2Operations(serviceVersion: string, exampleImage: string) {
  return {
    predict: predictOperation('predict', 'Analyse one image with the latest model', false, exampleImage, serviceVersion),
    predictWithModel: predictOperation('predict_with_model', 'Analyse one image with the named model', true, exampleImage, serviceVersion),
    listModels: getOperation('list_models', 'List the loaded models', 'Every loaded model pack with its default threshold.', {
      description: 'Loaded models',
      headers: responseHeaders,
      content: jsonContent('ModelList', { models: { summary: 'The two packs shipped', value: modelsExample(serviceVersion) } }),
    }),
    stats: getOperation(
      'batching_stats',
      'Micro-batcher and session counters per model',
      'Counters since start, per model: requests through the micro-batcher, batch sizes, queue waits, refusals, and the batch sizes each ONNX Runtime session is run at.',
      {
        description: 'Counters since start',
      headers: responseHeaders,
        content: jsonContent('StatsResponse', { stats: { summary: 'After four requests to bc-v1', value: statsExample } }),
      },
    ),
  };
}

const V2_TAGS = [
  { name: 'Prediction', description: 'Analyse one photo: is there a cat, and does it show comfort or discomfort?' },
  { name: 'Models and service', description: 'The loaded models and the micro-batcher counters' },
];

/** Another interface's operations in this document (on /v2 paths): its tag, a paragraph and its schemas. */
export interface DocumentAddition {
  tag: { name: string; description: string };
  description: string;
  schemas: Record<string, TSchema>;
}

/** The v2 document around `paths`: the operations of the routes registered for it (Router.paths). */
export function buildV2OpenApi(serviceVersion: string, paths: Record<string, unknown>, additions: DocumentAddition[] = []): Record<string, unknown> {
  const v2Codes = (Object.keys(errorTable) as ErrorKind[]).filter((k) => !('only' in errorTable[k])).map((k) => ({ code: errorTable[k].code, status: HTTP_STATUS[k] }));
  return openApiDocument({
    title: 'Cat Comfort Detection API',
    version: '2',
    description: [
      `Detects a cat in a photo and says whether it shows comfort or discomfort. Service release ${serviceVersion}.`,
      'Every request needs the `api-key` header (use **Authorize**). "Try it out" on a predict operation sends a small cat photo.',
      `Error codes: ${[...new Map(v2Codes.map((e) => [`${e.code} ${e.status}`, `\`${e.code}\` (${e.status})`])).values()].join(', ')}.`,
      `Any request can also be refused by the HTTP layer: ${protocolCodes.map((k) => `${HTTP_STATUS[k]} \`${errorTable[k].code}\``).join(', ')}.`,
      ...additions.map((a) => a.description),
    ].join('\n\n'),
    tags: [...V2_TAGS, ...additions.map((a) => a.tag)],
    paths,
    securitySchemes: API_KEY_SCHEME,
    schemas: {
      PredictRequest,
      PredictResponse,
      PredictExplanation,
      ErrorResponse,
      ModelList,
      StatsResponse,
      ...Object.assign({}, ...additions.map((a) => a.schemas)),
    },
  });
}
