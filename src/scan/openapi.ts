// The scan interface's OpenAPI 3.1 document, from the TypeBox schemas that validate it.
import { jsonContent, jsonSchema } from '../http/openapi-util';
import { ErrorResponse } from '../v2/schemas';
import { ScanAccepted, ScanList, ScanResource, ScanSubmitRequest } from './schemas';

const error = (description: string) => ({ description, content: jsonContent('ErrorResponse') });
const security = [{ ScanKey: [], ScanSecret: [] }];
const requestId = {
  name: 'X-Request-ID',
  in: 'header',
  required: false,
  description: 'Optional client request ID (1-128 of `A-Z a-z 0-9 . _ : -`), echoed as `request_id`',
  schema: { type: 'string' },
};

export function buildScanOpenApi(serviceVersion: string): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Cat Comfort scan API',
      version: '1',
      description: `Asynchronous scans: submit a photo (base64 or URL), then fetch the result by scanId. Service release ${serviceVersion}. Errors use the v2 ErrorResponse. Statuses: PENDING -> PROCESSING -> COMPLETED | FAILED; a scan accepted with 202 always reaches COMPLETED or FAILED.`,
    },
    paths: {
      '/scan': {
        post: {
          operationId: 'submit_scan',
          summary: 'Submit a photo for analysis',
          security,
          parameters: [
            requestId,
            { name: 'Idempotency-Key', in: 'header', required: false, description: '1-255 printable ASCII characters. A retry with the same key and body returns the same scan (200, `Idempotent-Replayed: true`); the same key with another body is 409 `idempotency_conflict`.', schema: { type: 'string' } },
          ],
          requestBody: { required: true, content: jsonContent('ScanSubmitRequest') },
          responses: {
            '202': { description: 'Accepted; `Location` names the scan', content: jsonContent('ScanAccepted') },
            '200': { description: 'Idempotent replay of an earlier submission', content: jsonContent('ScanAccepted') },
            '400': error('`invalid_image`: not valid base64, empty, or larger than 4 MB'),
            '401': error('`unauthorized`: missing or invalid `api-key` / `api-secret`'),
            '409': error('`idempotency_conflict`'),
            '413': error('`http_error`: body over CATCOMFORT_MAX_BODY_BYTES'),
            '415': error('`http_error`: Content-Type is not JSON'),
            '422': error('`invalid_request`: `details.errors` lists `{field, message}`'),
            '429': error('`too_many_failed_attempts`: too many failed credential checks from this client address (CATCOMFORT_SCAN_AUTH_FAILURES_PER_MINUTE), or `overloaded`; see `Retry-After`'),
            '500': error('`internal_error`'),
          },
        },
        get: {
          operationId: 'list_scans',
          summary: "List the caller's scans, newest first",
          security,
          parameters: [
            requestId,
            { name: 'petId', in: 'query', required: false, description: 'Only scans whose metadata.petId equals this', schema: { type: 'string' } },
            { name: 'customerId', in: 'query', required: false, description: 'Only scans whose metadata.customerId equals this', schema: { type: 'string' } },
            { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
            { name: 'cursor', in: 'query', required: false, description: '`nextCursor` of the previous page (opaque)', schema: { type: 'string' } },
          ],
          responses: {
            '200': { description: 'One page', content: jsonContent('ScanList') },
            '401': error('`unauthorized`'),
            '422': error('`invalid_request`: bad limit or cursor'),
            '429': error('`too_many_failed_attempts`: too many failed credential checks from this client address (CATCOMFORT_SCAN_AUTH_FAILURES_PER_MINUTE), or `overloaded`; see `Retry-After`'),
          },
        },
      },
      '/scan/{scanId}': {
        get: {
          operationId: 'get_scan',
          summary: 'Retrieve a scan',
          security,
          parameters: [requestId, { name: 'scanId', in: 'path', required: true, schema: { type: 'string' } }],
          responses: {
            '200': { description: 'The scan', content: jsonContent('ScanResource') },
            '401': error('`unauthorized`'),
            '404': error("`not_found`: unknown scanId, or another credential's scan"),
            '429': error('`too_many_failed_attempts`: too many failed credential checks from this client address (CATCOMFORT_SCAN_AUTH_FAILURES_PER_MINUTE), or `overloaded`; see `Retry-After`'),
          },
        },
      },
    },
    components: {
      securitySchemes: {
        ScanKey: { type: 'apiKey', in: 'header', name: 'api-key', description: 'Scan credential key id' },
        ScanSecret: { type: 'apiKey', in: 'header', name: 'api-secret', description: 'Scan credential secret' },
      },
      schemas: {
        ScanSubmitRequest: jsonSchema(ScanSubmitRequest),
        ScanAccepted: jsonSchema(ScanAccepted),
        ScanResource: jsonSchema(ScanResource),
        ScanList: jsonSchema(ScanList),
        ErrorResponse: jsonSchema(ErrorResponse),
      },
    },
  };
}
