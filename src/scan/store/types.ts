// Types of the scan store: one interface, two backends (SQLite embedded, PostgreSQL shared).

/**
 * Lifecycle of a scan:
 *   PENDING -> PROCESSING (claimed by a worker, with a lease) -> COMPLETED | FAILED.
 * A PROCESSING scan whose lease ran out (the worker died or stalled) is claimable again, exactly
 * like a PENDING one; every claim counts one attempt, and a scan whose lease ran out after
 * `maxAttempts` attempts becomes FAILED with code `processing_failed`.
 */
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
  createdAt: string;
  revokedAt: string | null;
}

export interface ApiKeyInfo {
  id: string;
  name: string;
  createdAt: string;
  revokedAt: string | null;
}

export interface ScanStore {
  /** Which backend this is. */
  readonly kind: 'sqlite' | 'postgres';
  /** Applies pending schema migrations; idempotent, safe with several instances starting at once. */
  migrate(): Promise<void>;
  /**
   * Stores a new PENDING scan. With an idempotency key already used by this owner: the existing
   * scan with `created: false` when the request hash matches, `{ conflict: true }` when it differs.
   */
  create(scan: NewScan): Promise<CreateResult>;
  /** The owner's scan, or null (unknown id, malformed id, or another owner's scan). */
  get(ownerId: string, id: string): Promise<ScanRecord | null>;
  /** Newest first (createdAt desc, id desc). Throws InvalidCursorError / RangeError on bad input. */
  list(ownerId: string, q: ListQuery): Promise<{ items: ScanRecord[]; nextCursor: string | null }>;
  /**
   * Takes the oldest claimable scan (PENDING, or PROCESSING with an expired lease) and marks it
   * PROCESSING for `workerId` until now + leaseMs. First fails (processing_failed) every scan whose
   * lease expired after `maxAttempts` attempts. Null when there is nothing to do.
   */
  claim(workerId: string, leaseMs: number, maxAttempts: number): Promise<ClaimedScan | null>;
  /** Pushes the lease of a scan this worker still holds; false if it no longer holds it. */
  extendLease(id: string, workerId: string, leaseMs: number): Promise<boolean>;
  appendLog(id: string, event: string, message: string): Promise<void>;
  /**
   * COMPLETED with the result; drops the image bytes. False when `workerId` no longer holds the
   * scan (another worker claimed it after the lease expired, or it already finished).
   */
  complete(id: string, workerId: string, result: ScanResult): Promise<boolean>;
  /** FAILED with the error; drops the image bytes. False as for complete. */
  fail(id: string, workerId: string, error: ScanError): Promise<boolean>;
  /** Deletes COMPLETED/FAILED scans (with their logs) finished before `olderThan`; returns how many. */
  purge(olderThan: Date): Promise<number>;

  /** New scan credential; the secret is returned once and only its scrypt hash is stored. */
  createCredential(name: string): Promise<{ id: string; keyId: string; secret: string }>;
  listCredentials(): Promise<ScanCredentialInfo[]>;
  /** Revokes by key id or credential id; true if it exists (revoked now or before). */
  revokeCredential(keyIdOrId: string): Promise<boolean>;
  /** Credential id when the key id exists, is not revoked and the secret matches; else null. */
  verifyCredential(keyId: string, secret: string): Promise<string | null>;

  /** New v1/v2 API key (format of KeyRing.generateKey); returned once, stored as sha256 hex. */
  createApiKey(name: string): Promise<{ id: string; key: string }>;
  listApiKeys(): Promise<ApiKeyInfo[]>;
  /** True if the key exists (revoked now or before). */
  revokeApiKey(id: string): Promise<boolean>;
  /** sha256 hex digests of the keys not revoked, for KeyRing.setIssuedDigests. */
  activeApiKeyDigests(): Promise<string[]>;

  close(): Promise<void>;
}

/** A `cursor` that this store did not produce (HTTP layer: 400/422). */
export class InvalidCursorError extends Error {
  constructor() {
    super('Invalid cursor.');
    this.name = 'InvalidCursorError';
  }
}
