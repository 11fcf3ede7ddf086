// PostgreSQL backend: several service instances share scans and work. Times come from the
// database clock (one clock for every instance's leases). Workers claim with
// `FOR UPDATE SKIP LOCKED`, so two claimers never take the same scan and never wait on each other.
// Migrations run under an advisory lock, so instances starting at once apply them exactly once.
import pg from 'pg';
import { KeyRing } from '../../http/auth';
import {
  PROCESSING_FAILED,
  assembleRecords,
  rowError,
  checkLease,
  checkListQuery,
  checkName,
  checkNewScan,
  claimedMessage,
  decodeCursor,
  encodeCursor,
  exhaustedMessage,
  hashSecret,
  indexedMetadata,
  newId,
  newKeyId,
  newSecret,
  normalizeId,
  requeuedMessage,
  sha256Hex,
  submittedMessage,
  verifySecret,
} from './common';
import { postgresMigrations } from './migrations';
import type {
  ApiKeyInfo,
  ClaimedScan,
  CreateResult,
  ListQuery,
  NewScan,
  ScanCredentialInfo,
  ScanError,
  ScanRecord,
  ScanResult,
  ScanSource,
  ScanStatus,
  ScanStore,
} from './types';

/** Advisory lock key of the migration step (the ASCII bytes of "catcomfo" as a bigint). */
const MIGRATION_LOCK = '7161132852915824239';

interface ScanRow {
  id: string;
  owner_id: string;
  status: ScanStatus;
  source: ScanSource;
  image_url: string | null;
  metadata: Record<string, unknown>;
  attempts: number;
  result: ScanResult | null;
  error_code: string | null;
  error_message: string | null;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}

const SCAN_COLUMNS =
  'id, owner_id, status, source, image_url, metadata, attempts, result, error_code, error_message, created_at, updated_at, completed_at';

const isoOrNull = (d: Date | null): string | null => (d === null ? null : d.toISOString());

export interface PostgresStoreOptions {
  /** Pool size; default 10. */
  maxConnections?: number;
}

export class PostgresScanStore implements ScanStore {
  readonly kind = 'postgres' as const;
  private readonly pool: pg.Pool;

  constructor(databaseUrl: string, options: PostgresStoreOptions = {}) {
    this.pool = new pg.Pool({ connectionString: databaseUrl, max: options.maxConnections ?? 10 });
    // An idle client losing its connection must not crash the process; the pool replaces it.
    this.pool.on('error', (error) => {
      process.stderr.write(
        JSON.stringify({ time: new Date().toISOString(), level: 'warn', msg: 'postgres idle client error', error: error.message }) + '\n',
      );
    });
  }

  private async tx<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const value = await fn(client);
      await client.query('COMMIT');
      return value;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  }

  async migrate(): Promise<void> {
    const client = await this.pool.connect();
    try {
      await client.query(`SELECT pg_advisory_lock(${MIGRATION_LOCK})`);
      try {
        await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
          version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
        const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations');
        const applied = new Set(rows.map((r) => r.version));
        for (const migration of postgresMigrations) {
          if (applied.has(migration.version)) continue;
          await client.query('BEGIN');
          try {
            await client.query(migration.sql);
            await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
            await client.query('COMMIT');
          } catch (error) {
            await client.query('ROLLBACK').catch(() => undefined);
            throw error;
          }
        }
      } finally {
        await client.query(`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`);
      }
    } finally {
      client.release();
    }
  }

  private async records(rows: ScanRow[], db: pg.Pool | pg.PoolClient = this.pool): Promise<ScanRecord[]> {
    if (rows.length === 0) return [];
    const { rows: logs } = await db.query<{ scan_id: string; at: Date; event: string; message: string }>(
      'SELECT scan_id, at, event, message FROM scan_logs WHERE scan_id = ANY($1::uuid[]) ORDER BY seq',
      [rows.map((r) => r.id)],
    );
    return assembleRecords(
      rows.map((row) => ({
        id: row.id,
        ownerId: row.owner_id,
        status: row.status,
        source: row.source,
        imageUrl: row.image_url,
        metadata: row.metadata,
        createdAt: row.created_at.toISOString(),
        updatedAt: row.updated_at.toISOString(),
        completedAt: isoOrNull(row.completed_at),
        attempts: row.attempts,
        result: row.result,
        error: rowError(row.error_code, row.error_message),
      })),
      logs.map((log) => ({ scanId: log.scan_id, at: log.at.toISOString(), event: log.event, message: log.message })),
    );
  }

  async create(scan: NewScan): Promise<CreateResult> {
    checkNewScan(scan);
    const { petId, customerId } = indexedMetadata(scan.metadata);
    // Two tries: the scan holding the key could be purged between the insert and the lookup.
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const inserted = await this.tx(async (client) => {
        const { rows } = await client.query<ScanRow>(
          `INSERT INTO scans (id, owner_id, status, source, image, image_url, metadata, pet_id, customer_id,
             idempotency_key, request_hash, attempts, created_at, updated_at)
           VALUES ($1, $2, 'PENDING', $3, $4, $5, $6, $7, $8, $9, $10, 0, clock_timestamp(), clock_timestamp())
           ON CONFLICT (owner_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
           RETURNING ${SCAN_COLUMNS}`,
          [
            newId(),
            scan.ownerId,
            scan.source,
            scan.image,
            scan.imageUrl,
            JSON.stringify(scan.metadata),
            petId,
            customerId,
            scan.idempotencyKey,
            scan.requestHash,
          ],
        );
        const row = rows[0];
        if (row === undefined) return null;
        await client.query(`INSERT INTO scan_logs (scan_id, at, event, message) VALUES ($1, $2, 'submitted', $3)`, [
          row.id,
          row.created_at,
          submittedMessage(scan.source),
        ]);
        return (await this.records([row], client))[0]!;
      });
      if (inserted !== null) return { scan: inserted, created: true };
      const { rows } = await this.pool.query<ScanRow & { request_hash: string }>(
        `SELECT ${SCAN_COLUMNS}, request_hash FROM scans WHERE owner_id = $1 AND idempotency_key = $2`,
        [scan.ownerId, scan.idempotencyKey],
      );
      const existing = rows[0];
      if (existing === undefined) continue;
      if (existing.request_hash !== scan.requestHash) return { conflict: true };
      return { scan: (await this.records([existing]))[0]!, created: false };
    }
    throw new Error('idempotent create: the scan holding the key vanished twice');
  }

  async get(ownerId: string, id: string): Promise<ScanRecord | null> {
    const normalized = normalizeId(id);
    if (normalized === null) return null;
    const { rows } = await this.pool.query<ScanRow>(`SELECT ${SCAN_COLUMNS} FROM scans WHERE id = $1 AND owner_id = $2`, [
      normalized,
      ownerId,
    ]);
    return rows.length === 0 ? null : (await this.records(rows))[0]!;
  }

  async list(ownerId: string, q: ListQuery): Promise<{ items: ScanRecord[]; nextCursor: string | null }> {
    checkListQuery(q);
    const params: unknown[] = [ownerId];
    const where = ['owner_id = $1'];
    if (q.petId !== undefined) {
      params.push(q.petId);
      where.push(`pet_id = $${params.length}`);
    }
    if (q.customerId !== undefined) {
      params.push(q.customerId);
      where.push(`customer_id = $${params.length}`);
    }
    if (q.cursor !== undefined) {
      const cursor = decodeCursor(q.cursor);
      params.push(cursor.createdAt, cursor.id);
      where.push(`(created_at, id) < ($${params.length - 1}::timestamptz, $${params.length}::uuid)`);
    }
    params.push(q.limit + 1);
    const { rows } = await this.pool.query<ScanRow>(
      `SELECT ${SCAN_COLUMNS} FROM scans WHERE ${where.join(' AND ')}
       ORDER BY created_at DESC, id DESC LIMIT $${params.length}`,
      params,
    );
    const more = rows.length > q.limit;
    const items = await this.records(rows.slice(0, q.limit));
    const last = items[items.length - 1];
    return { items, nextCursor: more && last !== undefined ? encodeCursor(last.createdAt, last.id) : null };
  }

  async claim(workerId: string, leaseMs: number, maxAttempts: number): Promise<ClaimedScan | null> {
    checkLease(leaseMs, maxAttempts);
    return this.tx(async (client) => {
      // Scans whose last allowed attempt ran out of lease: FAILED (processing_failed).
      const { rows: exhausted } = await client.query<{ id: string; attempts: number }>(
        `UPDATE scans SET status = 'FAILED', error_code = $2,
           error_message = 'Processing did not finish after ' || attempts || ' attempts.',
           image = NULL, lease_until = NULL, completed_at = now(), updated_at = now()
         WHERE id IN (
           SELECT id FROM scans
           WHERE status IN ('PENDING', 'PROCESSING') AND status = 'PROCESSING' AND lease_until < now() AND attempts >= $1
           FOR UPDATE SKIP LOCKED)
         RETURNING id, attempts`,
        [maxAttempts, PROCESSING_FAILED],
      );
      for (const scan of exhausted) {
        await client.query(`INSERT INTO scan_logs (scan_id, at, event, message) VALUES ($1, now(), 'failed', $2)`, [
          scan.id,
          `${PROCESSING_FAILED}: ${exhaustedMessage(scan.attempts)}`,
        ]);
      }
      const { rows } = await client.query<{ id: string; status: ScanStatus; attempts: number }>(
        `SELECT id, status, attempts FROM scans
         WHERE status IN ('PENDING', 'PROCESSING') AND (status = 'PENDING' OR (lease_until < now() AND attempts < $1))
         ORDER BY created_at, id LIMIT 1
         FOR UPDATE SKIP LOCKED`,
        [maxAttempts],
      );
      const picked = rows[0];
      if (picked === undefined) return null;
      const { rows: claimed } = await client.query<{
        id: string;
        owner_id: string;
        source: ScanSource;
        image: Buffer | null;
        image_url: string | null;
        attempts: number;
      }>(
        `UPDATE scans SET status = 'PROCESSING', attempts = attempts + 1, worker_id = $2,
           lease_until = now() + make_interval(secs => $3::double precision / 1000), updated_at = now()
         WHERE id = $1
         RETURNING id, owner_id, source, image, image_url, attempts`,
        [picked.id, workerId, leaseMs],
      );
      const row = claimed[0]!;
      if (picked.status === 'PROCESSING') {
        await client.query(`INSERT INTO scan_logs (scan_id, at, event, message) VALUES ($1, now(), 'lease_expired_requeued', $2)`, [
          row.id,
          requeuedMessage(picked.attempts),
        ]);
      }
      await client.query(`INSERT INTO scan_logs (scan_id, at, event, message) VALUES ($1, now(), 'claimed', $2)`, [
        row.id,
        claimedMessage(row.attempts),
      ]);
      return { id: row.id, ownerId: row.owner_id, source: row.source, image: row.image, imageUrl: row.image_url, attempts: row.attempts };
    });
  }

  async extendLease(id: string, workerId: string, leaseMs: number): Promise<boolean> {
    const normalized = normalizeId(id);
    if (normalized === null) return false;
    const { rowCount } = await this.pool.query(
      `UPDATE scans SET lease_until = clock_timestamp() + make_interval(secs => $3::double precision / 1000),
         updated_at = clock_timestamp()
       WHERE id = $1 AND status = 'PROCESSING' AND worker_id = $2`,
      [normalized, workerId, leaseMs],
    );
    return rowCount === 1;
  }

  async appendLog(id: string, event: string, message: string): Promise<void> {
    const normalized = normalizeId(id);
    if (normalized === null) return;
    await this.pool.query(
      `INSERT INTO scan_logs (scan_id, at, event, message) SELECT id, clock_timestamp(), $2, $3 FROM scans WHERE id = $1`,
      [normalized, event, message],
    );
  }

  /** One statement: the state change and its log line commit together. */
  private async finish(id: string, workerId: string, set: string, values: unknown[], event: string, message: string): Promise<boolean> {
    const normalized = normalizeId(id);
    if (normalized === null) return false;
    const { rowCount } = await this.pool.query(
      `WITH done AS (
         UPDATE scans SET ${set}, image = NULL, lease_until = NULL, completed_at = clock_timestamp(), updated_at = clock_timestamp()
         WHERE id = $1 AND status = 'PROCESSING' AND worker_id = $2
         RETURNING id, completed_at)
       INSERT INTO scan_logs (scan_id, at, event, message) SELECT id, completed_at, $3, $4 FROM done`,
      [normalized, workerId, event, message, ...values],
    );
    return rowCount === 1;
  }

  async complete(id: string, workerId: string, result: ScanResult): Promise<boolean> {
    return this.finish(id, workerId, `status = 'COMPLETED', result = $5::jsonb`, [JSON.stringify(result)], 'completed', 'Scan completed.');
  }

  async fail(id: string, workerId: string, error: ScanError): Promise<boolean> {
    return this.finish(
      id,
      workerId,
      `status = 'FAILED', error_code = $5, error_message = $6`,
      [error.code, error.message],
      'failed',
      `${error.code}: ${error.message}`,
    );
  }

  async purge(olderThan: Date): Promise<number> {
    const { rowCount } = await this.pool.query(
      `DELETE FROM scans WHERE status IN ('COMPLETED', 'FAILED') AND completed_at < $1`,
      [olderThan],
    );
    return rowCount ?? 0;
  }

  async createCredential(name: string): Promise<{ id: string; keyId: string; secret: string }> {
    const cleanName = checkName(name);
    const id = newId();
    const keyId = newKeyId();
    const secret = newSecret();
    const secretHash = await hashSecret(secret);
    await this.pool.query(
      'INSERT INTO scan_credentials (id, key_id, secret_hash, name, created_at) VALUES ($1, $2, $3, $4, clock_timestamp())',
      [id, keyId, secretHash, cleanName],
    );
    return { id, keyId, secret };
  }

  async listCredentials(): Promise<ScanCredentialInfo[]> {
    const { rows } = await this.pool.query<{ id: string; key_id: string; name: string; created_at: Date; revoked_at: Date | null }>(
      'SELECT id, key_id, name, created_at, revoked_at FROM scan_credentials ORDER BY created_at, id',
    );
    return rows.map((r) => ({
      id: r.id,
      keyId: r.key_id,
      name: r.name,
      createdAt: r.created_at.toISOString(),
      revokedAt: isoOrNull(r.revoked_at),
    }));
  }

  async revokeCredential(keyIdOrId: string): Promise<boolean> {
    const { rows } = await this.pool.query<{ id: string }>(
      `WITH target AS (SELECT id FROM scan_credentials WHERE key_id = $1 OR id = $2::uuid),
       revoked AS (UPDATE scan_credentials SET revoked_at = clock_timestamp()
                   WHERE id IN (SELECT id FROM target) AND revoked_at IS NULL)
       SELECT id FROM target`,
      [keyIdOrId, normalizeId(keyIdOrId)],
    );
    return rows.length > 0;
  }

  async verifyCredential(keyId: string, secret: string): Promise<string | null> {
    const { rows } = await this.pool.query<{ id: string; secret_hash: string; revoked_at: Date | null }>(
      'SELECT id, secret_hash, revoked_at FROM scan_credentials WHERE key_id = $1',
      [keyId],
    );
    const row = rows[0];
    const usable = row !== undefined && row.revoked_at === null;
    const ok = await verifySecret(secret, usable ? row.secret_hash : null);
    return ok && usable ? row.id : null;
  }

  async createApiKey(name: string): Promise<{ id: string; key: string }> {
    const cleanName = checkName(name);
    const id = newId();
    const key = KeyRing.generateKey();
    await this.pool.query('INSERT INTO api_keys (id, name, digest, created_at) VALUES ($1, $2, $3, clock_timestamp())', [
      id,
      cleanName,
      sha256Hex(key),
    ]);
    return { id, key };
  }

  async listApiKeys(): Promise<ApiKeyInfo[]> {
    const { rows } = await this.pool.query<{ id: string; name: string; created_at: Date; revoked_at: Date | null }>(
      'SELECT id, name, created_at, revoked_at FROM api_keys ORDER BY created_at, id',
    );
    return rows.map((r) => ({ id: r.id, name: r.name, createdAt: r.created_at.toISOString(), revokedAt: isoOrNull(r.revoked_at) }));
  }

  async revokeApiKey(id: string): Promise<boolean> {
    const normalized = normalizeId(id);
    if (normalized === null) return false;
    const { rows } = await this.pool.query<{ id: string }>(
      `WITH target AS (SELECT id FROM api_keys WHERE id = $1),
       revoked AS (UPDATE api_keys SET revoked_at = clock_timestamp() WHERE id IN (SELECT id FROM target) AND revoked_at IS NULL)
       SELECT id FROM target`,
      [normalized],
    );
    return rows.length > 0;
  }

  async activeApiKeyDigests(): Promise<string[]> {
    const { rows } = await this.pool.query<{ digest: string }>(
      'SELECT digest FROM api_keys WHERE revoked_at IS NULL ORDER BY created_at, id',
    );
    return rows.map((r) => r.digest);
  }

  private closed = false;

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}
