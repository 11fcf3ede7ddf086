// The v1 (legacy) OpenAPI description, shaped like the FastAPI app it replaces.
import { Type } from '@sinclair/typebox';
import { jsonSchema } from '../http/openapi-util';

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

const ref = (name: string) => ({ 'application/json': { schema: { $ref: `#/components/schemas/${name}` } } });

function invocation(summary: string, withThreshold: boolean, deprecated: boolean): Record<string, unknown> {
  return {
    summary,
    deprecated,
    security: [{ ApiKeyAuth: [] }],
    parameters: withThreshold
      ? [{ name: 'threshold', in: 'query', required: false, schema: { anyOf: [{ type: 'number' }, { type: 'null' }], title: 'Threshold' } }]
      : [],
    requestBody: { required: true, content: ref('InvocationRequest') },
    responses: {
      '200': { description: 'Prediction, or `success: false` with a message', content: ref('InvocationResponse') },
      '400': { description: '`media_type` video on an image-only endpoint', content: ref('Detail') },
      '401': { description: 'Missing or invalid api-key', content: ref('Detail') },
      '422': { description: 'Validation Error', content: ref('HTTPValidationError') },
      '429': { description: 'Overloaded; see Retry-After', content: ref('Detail') },
    },
  };
}

export function buildV1OpenApi(serviceVersion: string): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: { title: 'Cat Comfort Detection (v1, legacy)', version: serviceVersion, description: 'Legacy interface; new integrations use /v2 (see /v2/docs).' },
    paths: {
      '/invocations': { post: invocation('Predict with the latest model (bc-v1)', true, false) },
      '/invocations/bc-v1': { post: invocation('Predict with bc-v1', true, false) },
      '/invocations/bc-legacy': { post: invocation('Predict with the original mood model; accepts video (deprecated)', false, true) },
      '/ping': {
        get: {
          summary: 'Health check',
          security: [{ ApiKeyAuth: [] }],
          responses: {
            '200': { description: 'Healthy', content: { 'application/json': { schema: { type: 'object', properties: { status: { type: 'string' }, service: { type: 'string' } } } } } },
            '401': { description: 'Missing or invalid api-key', content: ref('Detail') },
          },
        },
      },
    },
    components: {
      securitySchemes: { ApiKeyAuth: { type: 'apiKey', in: 'header', name: 'api-key' } },
      schemas: {
        InvocationRequest: jsonSchema(InvocationRequest),
        InvocationResponse: jsonSchema(InvocationResponse),
        HTTPValidationError: jsonSchema(ValidationError),
        Detail: jsonSchema(Detail),
      },
    },
  };
}
