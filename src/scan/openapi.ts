// The scan interface's OpenAPI 3.1 document, from the TypeBox schemas that validate it, with
// examples taken from real answers and the example photo as the request example.
import { DEFAULT_RETRY_SCHEDULE } from '../config/retry-schedule';
import { MAX_BODY_BYTES } from '../config/settings';
import { COMMON_ERRORS, errorResponses, payloadTooLarge, type ErrorDoc } from '../http/docs/openapi-errors';
import { EXAMPLE_REQUEST_ID, jsonContent, openApiDocument } from '../http/docs/openapi-util';
import { ErrorResponse } from '../v2/schemas';
import { ScanAccepted, ScanEvent, ScanList, ScanResource, ScanSubmitRequest } from './schemas';

const security = [{ ScanKey: [], ScanSecret: [] }];
const requestId = {
  name: 'X-Request-ID',
  in: 'header',
  required: false,
  description: 'Optional client request ID (1-128 of `A-Z a-z 0-9 . _ : -`), echoed as `request_id`',
  schema: { type: 'string' },
  example: 'checkout-42',
};

const SCAN_ID = '01a208fa-a657-73b8-843a-c575e0b46488';
const CREATED = '2026-11-23T15:16:14.039Z';
const DONE = '2026-11-23T15:16:14.087Z';

const unauthorized: ErrorDoc = { kind: 'unauthorized', when: 'missing or invalid `api-key` / `api-secret`' };
const throttled: ErrorDoc = {
  kind: 'auth_throttled',
  when: 'too many failed credential checks from this client address (CATCOMFORT_SCAN_AUTH_FAILURES_PER_MINUTE); see `Retry-After`',
};
const overloaded: ErrorDoc = { kind: 'overloaded', when: 'too many credential checks at once; see `Retry-After`' };
const { internal } = COMMON_ERRORS;
const unavailable: ErrorDoc = { kind: 'unavailable', when: 'the service is shutting down', message: 'The service is shutting down.' };
const storeUnavailable: ErrorDoc = {
  kind: 'store_unavailable',
  when: 'the scan store cannot be reached or cannot write (database stopped, disk full); transient, see `Retry-After`',
};

const WEBHOOK_ID = 'msg_5b0f0d1c9e8a4f3aa1d2c3b4e5f60718';
const DELIVERED = '2026-11-23T15:16:14.101Z';

/** A completed scan as GET gives it (with its delivery) or as its webhook carries it (`webhook: false`). */
function completedScan(version: string, webhook = true): Record<string, unknown> {
  return {
    scanId: SCAN_ID,
    status: 'COMPLETED',
    createdAt: CREATED,
    updatedAt: DONE,
    completedAt: DONE,
    isCat: true,
    isHappy: false,
    predictions: { prediction: 'Unhappy', probability: 0.319968, cat_quality: 0.943509, message: 'Success' },
    detection: 'detected',
    boundingBox: { x_min: 1, y_min: 0, x_max: 158, y_max: 106 },
    image: { width: 160, height: 106 },
    model: { id: 'bc-v1', version },
    source: 'base64',
    imageUrl: null,
    metadata: { petId: 'pet-7', customerId: 'customer-3' },
    logs: [
      { at: CREATED, event: 'submitted', message: 'Scan accepted (image from base64).' },
      { at: '2026-11-23T15:16:14.042Z', event: 'claimed', message: 'Processing started (attempt 1).' },
      { at: '2026-11-23T15:16:14.043Z', event: 'worker', message: 'processed by worker 21727-6bb436fb (pid 21727)' },
      { at: DONE, event: 'completed', message: 'Scan completed.' },
      ...(webhook
        ? [{ at: DELIVERED, event: 'webhook_delivered', message: 'Attempt 1 (instance pid 21727) to https://hooks.example.org/cats?…: HTTP 204 in 13 ms; delivered.' }]
        : []),
    ],
    error: null,
    ...(webhook
      ? {
          webhook: {
            webhookId: WEBHOOK_ID,
            event: 'scan.completed',
            url: 'https://hooks.example.org/cats?…',
            state: 'delivered',
            attempts: 1,
            nextAttemptAt: null,
            lastAttemptAt: DELIVERED,
            lastStatus: 204,
            lastError: null,
            createdAt: DONE,
            finishedAt: DELIVERED,
          },
        }
      : {}),
  };
}

const WEBHOOK_HEADERS = [
  { name: 'webhook-id', description: 'Same on every attempt of one event (and on a redelivery): drop repeats by it', example: WEBHOOK_ID },
  { name: 'webhook-timestamp', description: 'Unix seconds of this attempt; refuse old ones (the verifiers allow 5 minutes)', example: '1795446974' },
  {
    name: 'webhook-signature',
    description: '`v1,<base64 HMAC-SHA256>` of `id.timestamp.body` with the credential\'s signing secret; two, space-separated, while a rotated secret\'s overlap lasts',
    example: 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
  },
].map((h) => ({ name: h.name, in: 'header', required: true, description: h.description, schema: { type: 'string' }, example: h.example }));

/** The events the service posts to callback URLs (OpenAPI `webhooks`). */
function scanWebhooks(version: string): Record<string, unknown> {
  const event = (type: 'scan.completed' | 'scan.failed', summary: string, value: Record<string, unknown>) => ({
    post: {
      operationId: type.replace('.', '_'),
      summary,
      description: `Posted to the scan's \`callbackUrl\`, else to its credential's webhook URL, once the scan is ${type === 'scan.completed' ? 'COMPLETED' : 'FAILED'}; signed per Standard Webhooks (verify with the \`standardwebhooks\` library of your language and the credential's \`whsec_...\` secret). Delivered at least once: any 2xx acknowledges; anything else, a time-out (CATCOMFORT_WEBHOOK_TIMEOUT_MS, 10 s) or a refused connection is retried after ${DEFAULT_RETRY_SCHEDULE} (each ±20 %), then the delivery is failed. Redirects are not followed. GET /scan/{scanId} shows the delivery (\`webhook\`) and each attempt in \`logs\`.`,
      tags: ['Webhooks'],
      security: [], // no credential: the receiver checks the signature headers instead
      parameters: WEBHOOK_HEADERS,
      requestBody: { required: true, content: jsonContent('ScanEvent', { event: { summary, value } }) },
      responses: {
        '2XX': { description: 'Acknowledged: no further attempts' },
        default: { description: 'Not acknowledged: attempted again on the retry schedule' },
      },
    },
  });
  const failed = { ...completedScan(version, false), status: 'FAILED', isCat: null, isHappy: null, predictions: null, detection: null, boundingBox: null, image: null };
  return {
    'scan.completed': event('scan.completed', 'A scan completed', { type: 'scan.completed', request_id: WEBHOOK_ID, ...completedScan(version, false) }),
    'scan.failed': event('scan.failed', 'A scan failed', {
      type: 'scan.failed',
      request_id: WEBHOOK_ID,
      ...failed,
      logs: [{ at: CREATED, event: 'submitted', message: 'Scan accepted (image from base64).' }, { at: DONE, event: 'failed', message: 'invalid_image: Image could not be decoded.' }],
      error: { code: 'invalid_image', message: 'Image could not be decoded.' },
    }),
  };
}

const accepted = { request_id: EXAMPLE_REQUEST_ID, scanId: SCAN_ID, status: 'PENDING', createdAt: CREATED };

/** The operations of the scan routes (src/scan/routes.ts registers each with its route). */
export function scanOperations(serviceVersion: string, exampleImage: string) {
  return {
    submit: {
      operationId: 'submit_scan',
      summary: 'Submit a photo for analysis',
      tags: ['Scans'],
      security,
      parameters: [
        requestId,
        {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description:
            '1-255 printable ASCII characters, per credential, remembered for 24 hours. A retry with the same key and body within that time returns the original answer (202, the same `scanId`, with `Idempotent-Replayed: true`) and creates nothing; the same key with another body is 422 `idempotency_conflict`. Use one with every submit that may be retried (after a timeout, a dropped connection or a 503).',
          schema: { type: 'string' },
          example: 'order-1234-photo-1',
        },
      ],
      requestBody: {
      required: true,
        content: jsonContent('ScanSubmitRequest', {
          image: { summary: 'A 160x106 JPEG of a cat, with metadata', value: { image: exampleImage, metadata: { petId: 'pet-7', customerId: 'customer-3' } } },
          url: { summary: 'A hosted photo', value: { imageUrl: 'https://images.example.org/cats/7.jpg', metadata: { petId: 'pet-7' } } },
          callback: {
            summary: 'A hosted photo, its result posted to a webhook',
            value: { imageUrl: 'https://images.example.org/cats/7.jpg', callbackUrl: 'https://hooks.example.org/cats?token=abc' },
          },
        }),
      },
      responses: {
        '202': {
          description: 'Accepted; `Location` names the scan. Also the answer to a retry with the same `Idempotency-Key` and body, which carries `Idempotent-Replayed: true`',
          headers: {
            Location: { description: 'Path of the scan, `/scan/{scanId}`', schema: { type: 'string' } },
            'Idempotent-Replayed': { description: '`true` when this answers a retry: the scan is the first submission\'s', schema: { type: 'string' } },
          },
          content: jsonContent('ScanAccepted', { accepted: { summary: 'Queued for analysis', value: accepted } }),
        },
        ...errorResponses([
          { kind: 'invalid_image', when: 'not valid base64, empty, or larger than 4 MB', message: 'Image is not valid base64.' },
          { kind: 'bad_request', when: 'malformed `Content-Length`', message: 'Invalid Content-Length header.' },
          unauthorized,
          { kind: 'idempotency_conflict', when: 'the `Idempotency-Key` was used with another body' },
          payloadTooLarge(MAX_BODY_BYTES),
          { kind: 'unsupported_media_type', when: 'Content-Type is not JSON' },
          {
            kind: 'invalid_request',
            when: '`details.errors` lists `{field, message}`; also a `callbackUrl` that is not https, carries credentials or reaches a private address, or whose credential has no webhook signing secret',
            details: { errors: [{ field: 'body', message: 'Exactly one of image and imageUrl is required' }] },
          },
          throttled,
          overloaded,
          internal,
          unavailable,
          storeUnavailable,
        ]),
      },
    },
    list: {
      operationId: 'list_scans',
      summary: "List the caller's scans, newest first",
      tags: ['Scans'],
      security,
      parameters: [
        requestId,
        { name: 'petId', in: 'query', required: false, description: 'Only scans whose metadata.petId equals this', schema: { type: 'string' }, example: 'pet-7' },
        { name: 'customerId', in: 'query', required: false, description: 'Only scans whose metadata.customerId equals this', schema: { type: 'string' } },
        { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
        { name: 'cursor', in: 'query', required: false, description: '`nextCursor` of the previous page (opaque)', schema: { type: 'string' } },
      ],
      responses: {
        '200': {
          description: 'One page',
          content: jsonContent('ScanList', {
            page: { summary: 'The last page: one scan', value: { request_id: EXAMPLE_REQUEST_ID, items: [completedScan(serviceVersion)], nextCursor: null } },
          }),
        },
        ...errorResponses([
          unauthorized,
          { kind: 'invalid_request', when: 'bad limit or cursor', details: { errors: [{ field: 'limit', message: 'Input should be an integer from 1 to 100' }] } },
          throttled,
          overloaded,
          internal,
          unavailable,
          storeUnavailable,
        ]),
      },
    },
    get: {
      operationId: 'get_scan',
      summary: 'Retrieve a scan',
      tags: ['Scans'],
      security,
      parameters: [requestId, { name: 'scanId', in: 'path', required: true, schema: { type: 'string' }, example: SCAN_ID }],
      responses: {
        '200': { description: 'The scan', content: jsonContent('ScanResource', { completed: { summary: 'A completed scan', value: completedScan(serviceVersion) } }) },
        ...errorResponses([
          unauthorized,
          { kind: 'not_found', when: "unknown scanId, or another credential's scan" },
          throttled,
          overloaded,
          internal,
          unavailable,
          storeUnavailable,
        ]),
      },
    },
  };
}

/** The scan document around `paths`: the operations of the routes registered for it (Router.paths). */
export function buildScanOpenApi(serviceVersion: string, paths: Record<string, unknown>): Record<string, unknown> {
  return openApiDocument({
    title: 'Cat Comfort scan API',
    version: '1',
    description: `Asynchronous scans: submit a photo (base64 or URL), then fetch the result by scanId. Service release ${serviceVersion}. Errors use the v2 ErrorResponse. Statuses: PENDING -> PROCESSING -> COMPLETED | FAILED; a scan accepted with 202 always reaches COMPLETED or FAILED. Requests need a scan credential (\`api-key\` and \`api-secret\`, issued with \`catcomfort credentials create\`).`,
    tags: [
      { name: 'Scans', description: 'Submit photos and read their results' },
      { name: 'Webhooks', description: 'Results pushed to your callback URL: signed, retried until acknowledged' },
    ],
    paths,
    webhooks: scanWebhooks(serviceVersion),
    securitySchemes: {
      ScanKey: { type: 'apiKey', in: 'header', name: 'api-key', description: 'Scan credential key id' },
      ScanSecret: { type: 'apiKey', in: 'header', name: 'api-secret', description: 'Scan credential secret' },
    },
    schemas: {
      ScanSubmitRequest,
      ScanAccepted,
      ScanResource,
      ScanList,
      ScanEvent,
      ErrorResponse,
    },
  });
}
