// Types of the scan store's records, inputs and answers (the stores: scans.ts, credentials.ts, api-keys.ts).
import { ApiError, CodedFailure, retryAfter } from '../errors';

/** Lifecycle: see scans.ts. */
export type ScanStatus = 'PENDING' | 'PROCESSING' | 'COMPLETED' | 'FAILED';

export type ScanSource = 'base64' | 'url';

export interface ScanLogEntry {
  /** ISO 8601 UTC, millisecond precision. */
  at: string;
  /** e.g. submitted, claimed, lease_expired_requeued, fetching_url, completed, failed. */
  event: string;
  message: string;
}

/** Opaque JSON stored by the processor (detection, isCat, isHappy, predictions, box, ...). */
export interface ScanResult {
  [k: string]: unknown;
}

export interface ScanError {
  code: string;
  message: string;
}

export interface ScanRecord {
  id: string;
  ownerId: string;
  status: ScanStatus;
  source: ScanSource;
  imageUrl: string | null;
  metadata: Record<string, unknown>;
  /** ISO 8601 UTC with milliseconds; with `id` it gives the listing order. */
  createdAt: string;
  updatedAt: string;
  /** When the scan reached COMPLETED or FAILED; null before. */
  completedAt: string | null;
  /** Number of claims so far. */
  attempts: number;
  result: ScanResult | null;
  error: ScanError | null;
  logs: ScanLogEntry[];
}

export interface NewScan {
  /** Credential id of the caller; a caller only ever sees its own scans. */
  ownerId: string;
  source: ScanSource;
  /** Decoded image bytes (source base64); kept only until the scan is processed. */
  image: Buffer | null;
  imageUrl: string | null;
  /** Free JSON echoed back; string `petId` / `customerId` values are indexed for listing filters. */
  metadata: Record<string, unknown>;
  idempotencyKey: string | null;
  /** Where the scan's webhook goes (else the owner's default, if any); checked by the caller. */
  callbackUrl: string | null;
  /** Hash of the request body, to tell a replay from a different request with the same key. */
  requestHash: string;
}

export type CreateResult = { scan: ScanRecord; created: boolean } | { conflict: true };

export interface ClaimedScan {
  id: string;
  ownerId: string;
  source: ScanSource;
  image: Buffer | null;
  imageUrl: string | null;
  /** Attempt number of this claim (1 for the first). */
  attempts: number;
}

export interface ListQuery {
  petId?: string;
  customerId?: string;
  /** 1 to 100. */
  limit: number;
  /** `nextCursor` of the previous page. */
  cursor?: string;
}

export interface ScanCredentialInfo {
  id: string;
  keyId: string;
  name: string;
  /** Default callback URL of the credential's scans; null when none. */
  webhookUrl: string | null;
  createdAt: string;
  revokedAt: string | null;
}

/** What an issued key opens: the v1/v2 interfaces, or the admin listener. */
export type KeyScope = 'api' | 'admin';

export interface ApiKeyInfo {
  id: string;
  name: string;
  scope: KeyScope;
  createdAt: string;
  revokedAt: string | null;
}

export type WebhookEvent = 'scan.completed' | 'scan.failed';

/** Lifecycle of a delivery: see webhooks.ts. */
export type DeliveryState = 'pending' | 'delivered' | 'failed';

/** A scan's webhook delivery (one per finished scan that had a callback URL). */
export interface WebhookDelivery {
  /** Sent as `webhook-id` on every attempt, so receivers can drop duplicates. */
  webhookId: string;
  event: WebhookEvent;
  url: string;
  state: DeliveryState;
  /** Attempts begun so far. */
  attempts: number;
  /** When the next attempt is due (pending only). */
  nextAttemptAt: string | null;
  lastAttemptAt: string | null;
  /** HTTP status of the last answered attempt. */
  lastStatus: number | null;
  /** Why the last attempt failed (a short text without secrets). */
  lastError: string | null;
  createdAt: string;
  /** When the delivery was acknowledged or given up. */
  finishedAt: string | null;
}

/** A delivery taken by one dispatcher for one attempt, under a lease. */
export interface ClaimedDelivery {
  scanId: string;
  ownerId: string;
  webhookId: string;
  event: WebhookEvent;
  url: string;
  /** Attempt number of this claim (1 for the first). */
  attempt: number;
  /** The previous attempt's lease ran out without an outcome (its instance stopped). */
  requeued: boolean;
}

/** What one attempt came to; `logMessage` is the scan log line written with it. */
export type AttemptOutcome =
  | { kind: 'delivered'; status: number; logMessage: string }
  | { kind: 'retry'; status: number | null; error: string; retryInMs: number; logMessage: string }
  | { kind: 'failed'; status: number | null; error: string; logMessage: string };

/** A `cursor` that this store did not produce (HTTP layer: 400/422). */
export class InvalidCursorError extends Error {
  constructor() {
    super('Invalid cursor.');
    this.name = 'InvalidCursorError';
  }
}

/** Seconds a client is told to wait after a store fault: about how long a database restart takes. */
export const STORE_RETRY_AFTER_S = 5;

/**
 * The database cannot be reached or cannot write (connection refused or lost, timeout, disk full,
 * I/O error, lock timeout): a transient fault, answered 503 with Retry-After, never a bug's 500.
 * The drivers (sqlite-db.ts, postgres-db.ts) turn their errors into this one; `cause` keeps theirs.
 */
export class StoreUnavailableError extends CodedFailure {
  constructor(cause: unknown) {
    super(`scan store unavailable: ${(cause as Error)?.message ?? String(cause)}`, { cause });
    this.name = 'StoreUnavailableError';
  }

  coded(): ApiError {
    return new ApiError('store_unavailable', undefined, {}, retryAfter(STORE_RETRY_AFTER_S));
  }
}
