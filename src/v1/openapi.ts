// The v1 (legacy) OpenAPI description, shaped like the FastAPI app it replaces, with examples
// taken from real answers and the example photo as the request example.
import { Type } from '@sinclair/typebox';
import { MAX_BODY_BYTES } from '../config/settings';
import { API_KEY_SCHEME, jsonContent, openApiDocument, type Example } from '../http/docs/openapi-util';
import { v1BodyTooLargeMessage } from './errors';

const MediaData = Type.Object({
  image: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'Base64 image (lenient: characters outside the alphabet are skipped); no data: prefix' })),
  video: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: 'Base64 MP4, /invocations/bc-legacy only' })),
  frames_to_analyze: Type.Optional(Type.Union([Type.Integer(), Type.Null()], { default: 20 })),
  top_n_predictions: Type.Optional(Type.Union([Type.Integer(), Type.Null()], { default: 5 })),
});

const InvocationRequest = Type.Object({
  media_type: Type.Optional(Type.Union([Type.Literal('image'), Type.Literal('video')], { default: 'image' })),
  media_data: MediaData,
});

const Box = Type.Object({ x1: Type.Integer(), y1: Type.Integer(), x2: Type.Integer(), y2: Type.Integer() });

const InvocationResponse = Type.Object({
  mood_class: Type.Integer({ description: '1 Unhappy, 0 Happy, -1 no prediction' }),
  prediction: Type.Union([Type.Literal('Unhappy'), Type.Literal('Happy'), Type.Literal('Unknown')]),
  probability: Type.Number({ description: 'Confidence in the returned class; 0.0 without a prediction' }),
  threshold: Type.Optional(Type.Union([Type.Number(), Type.Null()], { description: 'Absent in bc-legacy video responses' })),
  message: Type.String(),
  success: Type.Boolean(),
  cat_quality: Type.Union([Type.Number(), Type.Null()]),
  cat_detected: Type.Boolean(),
  additional_data: Type.Union([
    Type.Object({
      input_dimensions: Type.String(),
      detected_cat_dimensions: Type.String(),
      size_unit: Type.Literal('pixels'),
      extraction_time: Type.Optional(Type.Number()),
      inference_time: Type.Optional(Type.Number()),
      total_extraction_time: Type.Optional(Type.Number()),
      total_prediction_time: Type.Optional(Type.Number()),
      frames_extracted: Type.Optional(Type.Integer()),
      top_n_predictions: Type.Optional(Type.Integer()),
      time_unit: Type.Literal('seconds'),
      bounding_box_cat: Type.Array(Box),
      model: Type.Optional(Type.String()),
    }),
    Type.Null(),
  ]),
  version: Type.Literal('2023-11-22'),
  inference_metadata: Type.Union([Type.Object({ version: Type.String(), build_number: Type.String() }), Type.Null()]),
});

const ValidationError = Type.Object({
  detail: Type.Array(
    Type.Object({
      type: Type.String(),
      loc: Type.Array(Type.Union([Type.String(), Type.Integer()])),
      msg: Type.String(),
      input: Type.Unknown(),
      ctx: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    }),
  ),
});

const Detail = Type.Object({ detail: Type.String() });

const ref = (name: string, examples?: Record<string, Example>) => jsonContent(name, examples);

const detail = (summary: string, text: string) => ref('Detail', { detail: { summary, value: { detail: text } } });

function requestExamples(exampleImage: string, video: boolean): Record<string, Example> {
  return {
    image: { summary: 'A 160x106 JPEG of a cat', value: { media_type: 'image', media_data: { image: exampleImage } } },
    ...(video ? { video: { summary: 'A base64 MP4 (shortened here)', value: { media_type: 'video', media_data: { video: 'AAAAIGZ0eXBpc29t...', frames_to_analyze: 20, top_n_predictions: 5 } } } } : {}),
  };
}

function responseExamples(model: 'BC-V1' | 'BC-Legacy', version: string): Record<string, Example> {
  const v1 = model === 'BC-V1';
  return {
    success: {
      summary: `The example photo with ${model}`,
      value: {
      mood_class: 1,
        prediction: 'Unhappy',
        probability: v1 ? 0.319968 : 0.866071,
        threshold: v1 ? 0.3 : null,
        message: 'Success',
      success: true,
        cat_quality: v1 ? 0.943509 : 0.812191,
      cat_detected: true,
        additional_data: {
          input_dimensions: '160x106',
          detected_cat_dimensions: v1 ? '157x106' : '143x104',
          size_unit: 'pixels',
          extraction_time: 0.031371,
          inference_time: 0.00207,
          time_unit: 'seconds',
          bounding_box_cat: [v1 ? { x1: 1, y1: 0, x2: 158, y2: 106 } : { x1: 0, y1: 0, x2: 143, y2: 104 }],
          model,
        },
        version: '2023-11-22',
        inference_metadata: v1 ? { version, build_number: 'local' } : null,
      },
    },
    no_cat: {
      summary: 'No cat in the photo: success false, HTTP 200',
      value: {
        mood_class: -1,
        prediction: 'Unknown',
        probability: 0.0,
      threshold: null,
        message: 'No cats detected',
      success: false,
      cat_quality: null,
      cat_detected: false,
      additional_data: null,
        version: '2023-11-22',
      inference_metadata: null,
      },
    },
  };
}

interface Invocation {
  operationId: string;
  summary: string;
  model: 'BC-V1' | 'BC-Legacy';
  legacy: boolean;
}

function invocation(op: Invocation, exampleImage: string, version: string): Record<string, unknown> {
  return {
    operationId: op.operationId,
    summary: op.summary,
    tags: ['Prediction'],
    deprecated: op.legacy,
    security: [{ ApiKeyAuth: [] }],
    parameters: op.legacy
      ? []
      : [{ name: 'threshold', in: 'query', required: false, description: "Discomfort threshold; omitted: the model's default", schema: { anyOf: [{ type: 'number' }, { type: 'null' }], title: 'Threshold' }, example: 0.5 }],
    requestBody: { required: true, content: ref('InvocationRequest', requestExamples(exampleImage, op.legacy)) },
    responses: {
      '200': { description: 'Prediction, or `success: false` with a message', content: ref('InvocationResponse', responseExamples(op.model, version)) },
      '400': {
        description: op.legacy ? 'Malformed `Content-Length`' : '`media_type` video on an image-only endpoint, or malformed `Content-Length`',
        content: op.legacy
          ? detail('Bad Content-Length', 'Invalid Content-Length header')
          : detail('Video sent here', 'Video input is not supported on this endpoint; send video to /invocations/bc-legacy.'),
      },
      '401': { description: 'Missing or invalid api-key', content: detail('No key', 'Invalid or missing API key') },
      '413': { description: 'Body larger than `CATCOMFORT_MAX_BODY_BYTES`', content: detail('Too large', v1BodyTooLargeMessage(MAX_BODY_BYTES)) },
      '422': {
        description: 'Validation Error',
        content: ref('HTTPValidationError', {
          missing: {
            summary: '`media_data` missing',
            value: { detail: [{ type: 'missing', loc: ['body', 'media_data'], msg: 'Field required', input: {} }] },
          },
        }),
      },
      '429': {
        description: 'Overloaded; see Retry-After',
        headers: { 'Retry-After': { description: 'Seconds to wait before retrying', schema: { type: 'integer' } } },
        content: detail('Overloaded', 'Too many requests; retry later'),
      },
      '500': { description: 'Unexpected failure (plain text `Internal Server Error`)', content: { 'text/plain': { schema: { type: 'string' }, example: 'Internal Server Error' } } },
      '503': { description: 'Shutting down', content: detail('Shutting down', 'Service Unavailable') },
    },
  };
}

/** The operations of the v1 routes (src/v1/routes.ts registers each with its route). */
export function v1Operations(serviceVersion: string, exampleImage: string) {
  return {
    invocations: invocation({ operationId: 'invocations', summary: 'Predict with the latest model (bc-v1)', model: 'BC-V1', legacy: false }, exampleImage, serviceVersion),
    invocationsBcV1: invocation({ operationId: 'invocations_bc_v1', summary: 'Predict with bc-v1', model: 'BC-V1', legacy: false }, exampleImage, serviceVersion),
    invocationsBcLegacy: invocation(
      { operationId: 'invocations_bc_legacy', summary: 'Predict with the original mood model; accepts video (deprecated)', model: 'BC-Legacy', legacy: true },
      exampleImage,
      serviceVersion,
    ),
    ping: {
          operationId: 'ping',
          summary: 'Health check',
          tags: ['Health'],
          security: [{ ApiKeyAuth: [] }],
          responses: {
            '200': {
              description: 'Healthy',
              content: {
                'application/json': {
                  schema: { type: 'object', properties: { status: { type: 'string' }, service: { type: 'string' } } },
                  example: { status: 'healthy', service: 'cat-comfort-detection' },
                },
              },
            },
            '401': { description: 'Missing or invalid api-key', content: detail('No key', 'Invalid or missing API key') },
          },
        },
  };
}

const V1_TAGS = [
  { name: 'Prediction', description: 'The FastAPI-compatible invocation endpoints' },
  { name: 'Health', description: 'Key-protected liveness check' },
];

/** The v1 document around `paths`: the operations of the routes registered for it (Router.paths). */
export function buildV1OpenApi(serviceVersion: string, paths: Record<string, unknown>): Record<string, unknown> {
  return openApiDocument({
    title: 'Cat Comfort Detection (v1, legacy)',
    version: serviceVersion,
    description: 'Legacy interface; new integrations use /v2 (see /v2/docs). Every request needs the `api-key` header (use **Authorize**).',
    tags: V1_TAGS,
    paths,
    securitySchemes: API_KEY_SCHEME,
    schemas: {
      InvocationRequest,
      InvocationResponse,
      HTTPValidationError: ValidationError,
      Detail,
    },
  });
}
