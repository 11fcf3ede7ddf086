// The Open Inference Protocol's REST operations in the v2 OpenAPI document (tag "Open Inference
// Protocol"), with examples from real answers and errors in the protocol's shape.
import { MAX_BODY_BYTES } from '../config/settings';
import { COMMON_ERRORS, errorResponses, payloadTooLarge, type ErrorDoc, type ErrorFormat } from '../http/docs/openapi-errors';
import { jsonContent } from '../http/docs/openapi-util';
import { oipError } from './error-body';
import { EXTENSIONS, PLATFORM, SERVER_NAME } from './metadata';
import { OipError, OipInferRequest, OipInferResponse, OipLive, OipModelMetadata, OipModelReady, OipReady, OipServerMetadata } from './schemas';
import { INPUT, OUTPUTS } from './tensors';

export const OIP_TAG = 'Open Inference Protocol';

const FORMAT: ErrorFormat = { schema: 'OipError', render: oipError };

const malformed: ErrorDoc = { kind: 'bad_request', when: 'a malformed request, refused by the HTTP front' };
const unauthorized: ErrorDoc = { kind: 'unauthorized', when: 'missing or invalid `api-key`' };
const modelNotFound: ErrorDoc = {
  kind: 'model_not_found',
  when: 'unknown model, or a version that is not loaded or does not answer (standby, shadow, previous); `details` names it',
  details: { model_id: 'bc-v9' },
};
const { internal, queueFull } = COMMON_ERRORS;
const unavailable: ErrorDoc = { kind: 'unavailable', when: 'not ready yet, or shutting down; see `Retry-After`' };

const inferErrors: ErrorDoc[] = [
  { kind: 'invalid_image', when: 'an image could not be used; the message names its index (`Image 1: ...`)', message: 'Image 1: Image could not be decoded.', details: { index: 1 } },
  { kind: 'bad_request', when: '`Inference-Header-Content-Length` is not a length within the body, or a malformed request' },
  unauthorized,
  modelNotFound,
  payloadTooLarge(MAX_BODY_BYTES),
  { kind: 'unsupported_media_type', when: 'neither `application/json` nor `Inference-Header-Content-Length`' },
  {
    kind: 'invalid_request',
    when: 'a malformed tensor, datatype, shape, output name or parameter; `details.errors` lists `{field, message}`',
    details: { errors: [{ field: 'inputs[0].datatype', message: "Input 'image' is BYTES (encoded images), not FP32." }] },
  },
  queueFull,
  internal,
  unavailable,
];

const modelIdParameter = { name: 'model_id', in: 'path', required: true, description: 'The pack id', schema: { type: 'string' }, example: 'bc-v1' };
const versionParameter = { name: 'version', in: 'path', required: true, description: 'A pack version that answers', schema: { type: 'string' }, example: '1.3.0' };
const inferHeaderParameter = {
  name: 'Inference-Header-Content-Length',
  in: 'header',
  required: false,
  description: 'Binary tensor data: the body is this many bytes of JSON header, then each binary tensor in order (BYTES: each element a 4-byte little-endian length and its bytes)',
  schema: { type: 'integer', minimum: 0 },
};

interface Op {
  id: string;
  summary: string;
  description: string;
  keyed: boolean;
  versioned?: boolean;
  responses: Record<string, unknown>;
  requestBody?: Record<string, unknown>;
}

function operation(op: Op, errors: ErrorDoc[]): Record<string, unknown> {
  const withModel = op.versioned !== undefined;
  return {
    operationId: op.versioned ? `${op.id}_version` : op.id,
    summary: op.versioned ? `${op.summary} (a named version)` : op.summary,
    description: op.description,
    tags: [OIP_TAG],
    security: op.keyed ? [{ ApiKeyAuth: [] }] : [],
    parameters: [...(withModel ? [modelIdParameter] : []), ...(op.versioned ? [versionParameter] : []), ...(op.requestBody ? [inferHeaderParameter] : [])],
    ...(op.requestBody ? { requestBody: op.requestBody } : {}),
    responses: { ...op.responses, ...errorResponses(errors, FORMAT) },
  };
}

const ok = (description: string, schema: string, summary: string, value: unknown) => ({ description, content: jsonContent(schema, { answer: { summary, value } }) });

function inferBody(exampleImage: string): Record<string, unknown> {
  const image = { name: 'image', datatype: 'BYTES', shape: [1], data: [exampleImage] };
  return {
    required: true,
    content: jsonContent('OipInferRequest', {
      cat: { summary: 'A 160x106 JPEG of a cat, every output', value: { inputs: [image] } },
      threshold: { summary: 'The same photo at threshold 0.5, two outputs', value: { parameters: { threshold: 0.5 }, inputs: [image], outputs: [{ name: 'detection' }, { name: 'label' }] } },
    }),
  };
}

const inferAnswer = {
  model_name: 'bc-v1',
  model_version: '1.3.0',
  outputs: [
    { name: 'detection', datatype: 'BYTES', shape: [1], data: ['detected'] },
    { name: 'confidence', datatype: 'FP32', shape: [1], data: [0.943509] },
    { name: 'box', datatype: 'FP32', shape: [1, 4], data: [1, 0, 158, 106] },
    { name: 'score', datatype: 'FP32', shape: [1], data: [0.319968] },
    { name: 'label', datatype: 'BYTES', shape: [1], data: ['discomfort'] },
    { name: 'image_size', datatype: 'INT32', shape: [1, 2], data: [160, 106] },
  ],
};

/** The operations of the protocol's routes (rest.ts registers each with its route). */
export function oipOperations(serviceVersion: string, exampleImage: string) {
  const model = (versioned: boolean) => ({
    metadata: operation(
      {
        id: 'oip_model_metadata',
        summary: 'Model metadata: its input and outputs',
        description: 'The pack id as a model: one BYTES input of encoded images, six outputs per image.',
        keyed: true,
        versioned,
        responses: { '200': ok('Model metadata', 'OipModelMetadata', 'bc-v1', { name: 'bc-v1', versions: ['1.3.0'], platform: PLATFORM, inputs: [INPUT], outputs: OUTPUTS }) },
      },
      [unauthorized, modelNotFound, internal, unavailable],
    ),
    ready: operation(
      {
        id: 'oip_model_ready',
        summary: 'Whether the model answers now',
        description: '200 `{"ready": true}` when it would answer; 503 `{"ready": false}` before the service is ready.',
        keyed: true,
        versioned,
        responses: { '200': ok('Ready', 'OipModelReady', 'Ready', { name: 'bc-v1', ready: true }) },
      },
      [unauthorized, modelNotFound, internal, unavailable],
    ),
    infer: operation(
      {
        id: 'oip_infer',
        summary: 'Analyse N images',
        description:
          'Each image is analysed as `/v2/predict` would and batched with everything in flight. JSON form: images in base64 in `data`. Binary form: `Inference-Header-Content-Length` and the images after the JSON header (see docs/oip.md); outputs come back as binary when asked (`binary_data`, `binary_data_output`), then as `application/octet-stream` with the same header. Fill values: confidence 0 and box zeros without a cat, score -1 and label "" unless detected.',
        keyed: true,
        versioned,
        requestBody: inferBody(exampleImage),
        responses: { '200': ok('Outputs per image', 'OipInferResponse', 'The example photo with bc-v1', inferAnswer) },
      },
      inferErrors,
    ),
  });
  const plain = model(false);
  const named = model(true);
  return {
    serverMetadata: operation(
      {
        id: 'oip_server_metadata',
        summary: 'Server metadata',
        description: 'The server name, release and protocol extensions.',
        keyed: true,
        responses: { '200': ok('Server metadata', 'OipServerMetadata', 'This service', { name: SERVER_NAME, version: serviceVersion, extensions: EXTENSIONS }) },
      },
      [unauthorized, internal, unavailable],
    ),
    modelMetadata: plain.metadata,
    modelMetadataVersion: named.metadata,
    modelReady: plain.ready,
    modelReadyVersion: named.ready,
    infer: plain.infer,
    inferVersion: named.infer,
  };
}

/** The health operations (registered before the packs load). */
export const OIP_HEALTH_OPERATIONS = {
  live: operation(
    { id: 'oip_live', summary: 'Liveness', description: 'Needs no key; answered while starting and while draining.', keyed: false, responses: { '200': ok('Live', 'OipLive', 'Live', { live: true }) } },
    [malformed],
  ),
  ready: operation(
    {
      id: 'oip_ready',
      summary: 'Readiness',
      description: 'Needs no key. 200 `{"ready": true}`, or 503 `{"ready": false}` with `Retry-After` while starting or draining.',
      keyed: false,
      responses: { '200': ok('Ready', 'OipReady', 'Ready', { ready: true }) },
    },
    [malformed],
  ),
};

/** What the protocol adds to the v2 document: its tag, a paragraph, and its body schemas. */
export const OIP_DOCUMENT = {
  tag: { name: OIP_TAG, description: 'The Open Inference Protocol (KServe v2) beside our API: metadata, health and infer with typed tensors' },
  description: `The ${OIP_TAG} operations answer errors in its shape, \`{"error", "code", "details", "request_id"}\`, with our codes; its health operations need no key.`,
  schemas: { OipServerMetadata, OipModelMetadata, OipLive, OipReady, OipModelReady, OipInferRequest, OipInferResponse, OipError },
};
