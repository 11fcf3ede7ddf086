// Wire schemas of the scan interface: they generate its OpenAPI document. Requests are checked by
// validate.ts, whose rules and error messages these descriptions state.
import { Type, type Static } from '@sinclair/typebox';

export const METADATA_LIMITS = { maxBytes: 8192, maxDepth: 4, maxKeys: 64 } as const;

export const ScanSubmitRequest = Type.Object(
  {
    image: Type.Optional(
      Type.String({ minLength: 1, description: 'Base64 image (standard alphabet; optional `data:image/<type>;base64,` prefix), at most 4 MB decoded. Exactly one of `image` and `imageUrl`.' }),
    ),
    imageUrl: Type.Optional(
      Type.String({ minLength: 1, maxLength: 4096, description: 'http(s) URL of a hosted photo (at most 4 MB, image/* content type, at most 3 redirects; private addresses are refused). Exactly one of `image` and `imageUrl`.' }),
    ),
    callbackUrl: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 4096,
        description:
          'Where the `scan.completed` / `scan.failed` webhook of this scan is posted (instead of the credential\'s default callback URL). https only (http too where the service allows private addresses); no credentials in the URL; its host must resolve to public addresses only, checked now and again at each delivery. A credential that has no webhook signing secret (issued before webhooks) is refused until `catcomfort credentials rotate-webhook-secret` issues one.',
      }),
    ),
    metadata: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description: `Custom values echoed on the scan, e.g. \`petId\`, \`customerId\`, \`tags\`. At most ${METADATA_LIMITS.maxBytes} bytes as JSON, ${METADATA_LIMITS.maxKeys} keys per object, nesting depth ${METADATA_LIMITS.maxDepth}. \`petId\` and \`customerId\`, when present, must be strings (they are the listing filters).`,
      }),
    ),
  },
  { description: 'Unknown fields are ignored.' },
);
export type ScanSubmitRequest = Static<typeof ScanSubmitRequest>;

const Status = Type.Union([Type.Literal('PENDING'), Type.Literal('PROCESSING'), Type.Literal('COMPLETED'), Type.Literal('FAILED')], {
  description: 'PENDING -> PROCESSING -> COMPLETED | FAILED. A PROCESSING scan whose worker died returns to the queue when its lease expires.',
});

export const ScanAccepted = Type.Object({
  request_id: Type.String(),
  scanId: Type.String({ format: 'uuid' }),
  status: Status,
  createdAt: Type.String({ format: 'date-time' }),
});

export const WebhookState = Type.Union(
  [
    Type.Object({
      webhookId: Type.String({ description: 'The `webhook-id` header of every attempt (also after a redelivery): receivers drop repeats by it' }),
      event: Type.Union([Type.Literal('scan.completed'), Type.Literal('scan.failed')]),
      url: Type.String({ description: 'The callback URL, its query left out (`?…`)' }),
      state: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')], {
        description: 'pending (an attempt due or scheduled) -> delivered (a 2xx answer) | failed (no attempts left, or the URL refused)',
      }),
      attempts: Type.Integer({ description: 'Attempts begun so far' }),
      nextAttemptAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'When pending: when the next attempt is due' }),
      lastAttemptAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
      lastStatus: Type.Union([Type.Integer(), Type.Null()], { description: 'HTTP status of the last answered attempt' }),
      lastError: Type.Union([Type.String(), Type.Null()], { description: 'Why the last attempt was not acknowledged' }),
      createdAt: Type.String({ format: 'date-time' }),
      finishedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'When it was delivered or given up' }),
    }),
    Type.Null(),
  ],
  { description: 'The webhook delivery of a finished scan; null when the scan is not finished or had no callback URL. Every attempt is also in `logs` (events webhook_delivered, webhook_retry, webhook_failed).' },
);

const Box = Type.Object({ x_min: Type.Integer(), y_min: Type.Integer(), x_max: Type.Integer(), y_max: Type.Integer() });

export const ScanResource = Type.Object({
  scanId: Type.String({ format: 'uuid' }),
  status: Status,
  createdAt: Type.String({ format: 'date-time', description: 'ISO 8601 UTC' }),
  updatedAt: Type.String({ format: 'date-time' }),
  completedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  isCat: Type.Union([Type.Boolean(), Type.Null()], { description: 'Null until COMPLETED. True when a cat was detected (confidence >= 0.69).' }),
  isHappy: Type.Union([Type.Boolean(), Type.Null()], { description: 'Null unless a cat was detected; true when the prediction is Happy (comfort).' }),
  predictions: Type.Union(
    [
      Type.Object({
        prediction: Type.Union([Type.Literal('Happy'), Type.Literal('Unhappy'), Type.Literal('Unknown')]),
        probability: Type.Number({ description: 'Confidence in `prediction` (v1 rule); 0.0 for Unknown' }),
        cat_quality: Type.Union([Type.Number(), Type.Null()], { description: 'Detector confidence of the best candidate' }),
        message: Type.String({ description: '`Success`, `No cats detected` or `Cat image quality is too low`' }),
      }),
      Type.Null(),
    ],
    { description: 'Null until COMPLETED' },
  ),
  detection: Type.Union([Type.Literal('detected'), Type.Literal('low_confidence'), Type.Literal('not_detected'), Type.Null()]),
  boundingBox: Type.Union([Box, Type.Null()], { description: 'The cat in original-image pixels; null without a candidate' }),
  image: Type.Union([Type.Object({ width: Type.Integer(), height: Type.Integer() }), Type.Null()]),
  model: Type.Object({ id: Type.String(), version: Type.String() }),
  source: Type.Union([Type.Literal('base64'), Type.Literal('url')]),
  imageUrl: Type.Union([Type.String(), Type.Null()]),
  metadata: Type.Record(Type.String(), Type.Unknown()),
  logs: Type.Array(Type.Object({ at: Type.String({ format: 'date-time' }), event: Type.String(), message: Type.String() })),
  error: Type.Union([Type.Object({ code: Type.String(), message: Type.String() }), Type.Null()], { description: 'Set when FAILED' }),
  webhook: WebhookState,
});
export type ScanResource = Static<typeof ScanResource>;

const ScanAsFinished = Type.Omit(ScanResource, ['webhook']);

export const ScanEvent = Type.Intersect(
  [
    Type.Object({
      type: Type.Union([Type.Literal('scan.completed'), Type.Literal('scan.failed')]),
      request_id: Type.String({ description: 'The `webhook-id` of the delivery' }),
    }),
    ScanAsFinished,
  ],
  {
    description:
      'Body of a webhook: `type`, then GET /scan/{scanId} as it was when the scan finished (`request_id` is the webhook-id; without `webhook`, and without the delivery\'s own log lines).',
  },
);
export type ScanEvent = Static<typeof ScanEvent>;

export const ScanList = Type.Object({
  request_id: Type.String(),
  items: Type.Array(ScanResource),
  nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null on the last page' }),
});
