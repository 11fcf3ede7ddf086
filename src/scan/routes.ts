// The scan interface: POST /scan, GET /scan/{scanId}, GET /scan, and its description and docs.
// Errors use v2's ErrorResponse and codes; credentials are `api-key` (key id) + `api-secret`.
import { createHash } from 'node:crypto';
import { isJsonContentType } from '../http/content-type';
import { redocPage, swaggerPage } from '../http/docs/pages';
import { exampleImageBase64 } from '../http/docs/example-image';
import type { Exchange } from '../http/exchange';
import { ApiError, requestIdFrom } from '../errors';
import { errorResponse } from '../http/error-answers';
import type { Router } from '../http/router';
import type { Service } from '../service';
import { parseJsonObject } from '../http/json-body';
import { freeWhenRead } from '../native/own-memory';
import { sendError, sendJson } from '../http/respond';
import type { CredentialVerifier } from './auth';
import { buildScanOpenApi, scanOperations } from './openapi';
import { presentScan } from './present';
import type { StoreHealth } from './store-health';
import { InvalidCursorError, type ScanRecord, type Store, type WebhookDelivery } from '../store';
import type { ScanResource } from './schemas';
import { sentence, validateListQuery, validateSubmission } from './validate';
import type { ScanWorkers } from './worker';
import { isFetchRefusedError, type FetchPolicy } from './fetch';
import { checkCallbackUrl } from './webhooks/callback-url';
import { loadAddon } from '../native/addon';
import { imageErrorMessage } from '../pipeline/analysis';

export interface ScanContext {
  service: Service;
  store: Store;
  health: StoreHealth;
  verifier: CredentialVerifier;
  workers: ScanWorkers;
  maxImageBytes: number;
  /** The address policy callback URLs are checked against (the image fetcher's). */
  fetchPolicy: FetchPolicy;
}

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

type Handler = (
  ex: Exchange,
  requestId: string,
  ownerId: string,
  body: Promise<Buffer> | null,
) => Promise<{ status: number; body: unknown; headers?: Record<string, string> }>;

/** Authenticates synchronously-started requests; the body (if any) must be read before any await. */
function authed(ctx: ScanContext, readsBody: boolean, handler: Handler) {
  return (ex: Exchange): void => {
    const requestId = requestIdFrom(ex.header('x-request-id'));
    // The body read starts in the handler (http/exchange.ts readBody); it is only used once the caller is authenticated.
    const body = readsBody ? ex.readBody(ctx.service.config.maxBodyBytes) : null;
    body?.catch(() => undefined); // rejections are handled where the body is awaited
    ctx.verifier
      .verify(ex.header('api-key'), ex.header('api-secret'), ex.peerAddress)
      .then(async (ownerId) => {
        if (ownerId === null) throw new ApiError('unauthorized', 'Missing or invalid api-key / api-secret.');
        if (readsBody && !isJsonContentType(ex.header('content-type'))) throw new ApiError('unsupported_media_type');
        return handler(ex, requestId, ownerId, body);
      })
      .then(
        (r) => sendJson(ex, requestId, r.status, r.body, r.headers),
        (error: unknown) => sendError(ex, errorResponse, requestId, error),
      );
  };
}

function defaultModel(ctx: ScanContext) {
  return { id: ctx.workers.modelId, version: ctx.service.version };
}

const callbackError = (message: string) =>
  new ApiError('invalid_request', 'Request validation failed.', { errors: [{ field: 'callbackUrl', message }] });

/** A submission's callback URL, checked: its scheme and addresses, and a signing secret to sign with. */
async function checkedCallback(ctx: ScanContext, ownerId: string, url: string): Promise<string> {
  let checked: string;
  try {
    checked = await checkCallbackUrl(url, ctx.fetchPolicy);
  } catch (error) {
    if (!isFetchRefusedError(error)) throw error;
    throw callbackError(sentence(error.message));
  }
  const secrets = await ctx.health.track('submit', () => ctx.store.credentials.webhookSecrets(ownerId));
  if (secrets.length === 0) {
    throw callbackError('This credential has no webhook signing secret; an operator issues one with catcomfort credentials rotate-webhook-secret');
  }
  return checked;
}

/** The scans with their webhook deliveries, as the client sees them. */
function present(ctx: ScanContext, scans: ScanRecord[], deliveries: Map<string, WebhookDelivery>): ScanResource[] {
  return scans.map((s) => presentScan(s, defaultModel(ctx), deliveries.get(s.id) ?? null));
}

export function registerScan(router: Router, ctx: ScanContext): void {
  const ops = scanOperations(ctx.service.version, exampleImageBase64());
  const base64 = loadAddon(); // its strict decoder, the one v2 requests go through
  const doc = (operation: Record<string, unknown>) => ({ document: 'scan' as const, operation });
  // Built on first use, from the routes below (registered after this one: /scan/:scanId must not shadow it).
  let openapi: string | null = null;
  const html = (body: string) => (ex: Exchange) => ex.send(200, { 'Content-Type': 'text/html; charset=utf-8' }, body);
  router
    .add('GET', '/scan/openapi.json', (ex) => ex.send(200, { 'Content-Type': 'application/json' }, (openapi ??= JSON.stringify(buildScanOpenApi(ctx.service.version, router.paths('scan'))))))
    .add('GET', '/scan/docs', html(swaggerPage('Cat Comfort scan API', '/scan/openapi.json', '/v2/docs')))
    .add('GET', '/scan/redoc', html(redocPage('Cat Comfort scan API', '/scan/openapi.json', '/v2/redoc')))
    .add(
      'POST',
      '/scan',
      authed(ctx, true, async (ex, requestId, ownerId, body) => {
        const idempotencyKey = ex.header('idempotency-key') ?? null;
        if (idempotencyKey !== null && !IDEMPOTENCY_KEY.test(idempotencyKey)) {
          throw new ApiError('invalid_request', 'Request validation failed.', {
            errors: [{ field: 'Idempotency-Key', message: 'Header should be 1-255 printable ASCII characters' }],
          });
        }
        const raw = await body!;
        const submission = validateSubmission(parseJsonObject(raw));
        let image: Buffer | null = null;
        if (submission.image !== null) {
          const decoded = base64.decodeBase64Strict(submission.image);
          if (typeof decoded === 'string') throw new ApiError('invalid_image', imageErrorMessage(decoded, ctx.service.config.maxPixels));
          image = decoded;
          if (image.length > ctx.maxImageBytes) throw new ApiError('invalid_image', `Image is larger than ${ctx.maxImageBytes} bytes.`);
        }
        const callbackUrl = submission.callbackUrl === null ? null : await checkedCallback(ctx, ownerId, submission.callbackUrl);
        // The decoded image's memory is freed once the store has its copy.
        const decodedImage = image && freeWhenRead(image);
        const created = await ctx.health.track('submit', () => ctx.store.scans.create({
          ownerId,
          source: image ? 'base64' : 'url',
          image,
          imageUrl: submission.imageUrl,
          metadata: submission.metadata,
          idempotencyKey,
          callbackUrl,
          requestHash: createHash('sha256').update(raw).digest('hex'),
        })).finally(() => decodedImage?.letGo());
        if ('conflict' in created) throw new ApiError('idempotency_conflict');
        if (created.created) ctx.workers.notify();
        const scan = created.scan;
        return {
          status: 202,
          body: { request_id: requestId, scanId: scan.id, status: scan.status, createdAt: scan.createdAt },
          headers: { Location: `/scan/${scan.id}`, ...(created.created ? {} : { 'Idempotent-Replayed': 'true' }) },
        };
      }),
      doc(ops.submit),
    )
    .add(
      'GET',
      '/scan',
      authed(ctx, false, async (ex, requestId, ownerId) => {
        const params = validateListQuery(new URLSearchParams(ex.query));
        try {
          const { page, deliveries } = await ctx.health.track('list', () =>
            ctx.store.readScans(async (scans, webhooks) => {
              const page = await scans.list(ownerId, params);
              return { page, deliveries: await webhooks.ofScans(page.items.map((s) => s.id)) };
            }),
          );
          return {
            status: 200,
            body: { request_id: requestId, items: present(ctx, page.items, deliveries), nextCursor: page.nextCursor },
          };
        } catch (error) {
          if (error instanceof InvalidCursorError) {
            throw new ApiError('invalid_request', 'Request validation failed.', { errors: [{ field: 'cursor', message: 'Invalid cursor' }] });
          }
          throw error;
        }
      }),
      doc(ops.list),
    )
    .add(
      'GET',
      '/scan/:scanId',
      authed(ctx, false, async (ex, requestId, ownerId) => {
        const { scan, deliveries } = await ctx.health.track('get', () =>
          ctx.store.readScans(async (scans, webhooks) => {
            const scan = await scans.get(ownerId, ex.params.scanId!);
            return { scan, deliveries: scan === null ? new Map<string, WebhookDelivery>() : await webhooks.ofScans([scan.id]) };
          }),
        );
        if (!scan) throw new ApiError('not_found', 'Scan not found.', { scanId: ex.params.scanId });
        return { status: 200, body: { request_id: requestId, ...present(ctx, [scan], deliveries)[0] } };
      }),
      doc(ops.get),
    );
}
