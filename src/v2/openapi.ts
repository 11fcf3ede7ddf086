// The v2 OpenAPI 3.1 document, generated from the TypeBox schemas that validate requests.
import { jsonContent, jsonSchema } from '../http/openapi-util';
import { errorTable } from './errors';
import { ErrorResponse, ModelList, ModelSummary, PredictRequest, PredictResponse } from './schemas';

function errorResponse(description: string): Record<string, unknown> {
  return { description, content: jsonContent('ErrorResponse') };
}

const requestIdHeader = {
  name: 'X-Request-ID',
  in: 'header',
  required: false,
  description:
    'Client-chosen request ID: 1-128 characters of `A-Z a-z 0-9 . _ : -`. Other values are replaced by a generated UUID. Echoed in the body and the `X-Request-ID` response header.',
  schema: { type: 'string', maxLength: 128, pattern: '^[A-Za-z0-9._:-]{1,128}$' },
};

const responseHeaders = {
  'X-Request-ID': { description: 'The request ID, equal to `request_id` in the body', schema: { type: 'string' } },
};

function predictOperation(operationId: string, summary: string, withModel: boolean): Record<string, unknown> {
  const responses: Record<string, unknown> = {
    '200': { description: 'Analysis result', headers: responseHeaders, content: jsonContent('PredictResponse') },
    '400': errorResponse(
      '`invalid_image`: `Image is not valid base64.`, `Image is empty.`, `Image could not be decoded.`, `Unsupported pixel format; send an 8-bit image.`, or `Image is too large; at most N pixels.`; `http_error`: malformed `Content-Length`',
    ),
    '401': errorResponse('`unauthorized`: missing or invalid `api-key`'),
    '413': errorResponse('`http_error`: request body larger than `CATCOMFORT_MAX_BODY_BYTES`'),
    '415': errorResponse('`http_error`: Content-Type is not `application/json`'),
    '422': errorResponse(
      '`invalid_request`: body missing or malformed, `image` missing, or invalid `threshold`. `details.errors` lists `{field, message}`; submitted values are never echoed.',
    ),
    '429': errorResponse('`overloaded`: the queue is full or the deadline cannot be met; see `Retry-After`'),
    '500': errorResponse('`internal_error`: unexpected failure; nothing internal is disclosed'),
    '503': errorResponse('`unavailable`: the service is shutting down; see `Retry-After`'),
  };
  if (withModel) responses['404'] = errorResponse('`model_not_found`: unknown `model_id`; `details.model_id` names it');
  return {
    operationId,
    summary,
    security: [{ ApiKeyAuth: [] }],
    parameters: [
      ...(withModel
        ? [{ name: 'model_id', in: 'path', required: true, description: 'Model identifier, e.g. `bc-v1`', schema: { type: 'string' } }]
        : []),
      requestIdHeader,
    ],
    requestBody: { required: true, content: jsonContent('PredictRequest') },
    responses,
  };
}

export function buildV2OpenApi(serviceVersion: string): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Cat Comfort Detection API',
      version: '2',
      description: `Detects a cat in a photo and says whether it shows comfort or discomfort. Service release ${serviceVersion}. Error codes: ${Object.values(
        errorTable,
      )
        .filter((e) => !('scanOnly' in e))
        .map((e) => `\`${e.code}\` (${e.status})`)
        .join(', ')}.`,
    },
    servers: [{ url: '/' }],
    paths: {
      '/v2/predict': { post: predictOperation('predict', 'Analyse one image with the latest model', false) },
      '/v2/models/{model_id}/predict': {
        post: predictOperation('predict_with_model', 'Analyse one image with the named model', true),
      },
      '/v2/stats': {
        get: {
          operationId: 'batching_stats',
          summary: 'Micro-batcher and session counters per model',
          description:
            'Per model: `submitted`, `completed`, `batches`, `batchSizes` (index n = number of batches of size n), `queueTimeUsTotal`, `queueTimeUsMax`, `rejectedFull` (429, queue full), `expired` (429, deadline), `aborted` (client went away), `queued`, `inFlight`; `sessionBatches` `{detector, classifier}`: the batch sizes each ONNX Runtime session is run at, each with `runs` and `padRows` (zero rows that filled Runs up to that size).',
          security: [{ ApiKeyAuth: [] }],
          parameters: [requestIdHeader],
          responses: {
            '200': { description: 'Counters since start', headers: responseHeaders, content: { 'application/json': { schema: { type: 'object' } } } },
            '401': errorResponse('`unauthorized`'),
          },
        },
      },
      '/v2/models': {
        get: {
          operationId: 'list_models',
          summary: 'List the loaded models',
          security: [{ ApiKeyAuth: [] }],
          parameters: [requestIdHeader],
          responses: {
            '200': { description: 'Loaded models', headers: responseHeaders, content: jsonContent('ModelList') },
            '401': errorResponse('`unauthorized`'),
          },
        },
      },
    },
    components: {
      securitySchemes: { ApiKeyAuth: { type: 'apiKey', in: 'header', name: 'api-key' } },
      schemas: {
        PredictRequest: jsonSchema(PredictRequest),
        PredictResponse: jsonSchema(PredictResponse),
        ErrorResponse: jsonSchema(ErrorResponse),
        ModelSummary: jsonSchema(ModelSummary),
        ModelList: jsonSchema(ModelList),
      },
    },
  };
}
