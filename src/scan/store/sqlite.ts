// SQLite backend (embedded default): one file under the data folder, WAL journal, synchronous=FULL
// so a commit that returned survives power loss. better-sqlite3 is synchronous; every call here is
// one short statement or one short transaction. Writers take the lock up front (BEGIN IMMEDIATE), so
// several processes may share the file safely (busy_timeout waits for the lock).
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
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
import { sqliteMigrations } from './migrations';
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

export const SQLITE_FILE = 'catcomfort.sqlite3';

interface ScanRow {
  id: string;
  owner_id: string;
  status: ScanStatus;
  source: ScanSource;
  image_url: string | null;
  metadata: string;
  request_hash: string;
  attempts: number;
  result: string | null;
  error_code: string | null;
  error_message: string | null;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
}

interface LogRow {
  scan_id: string;
  at: number;
  event: string;
  message: string;
}

const SCAN_COLUMNS =
  'id, owner_id, status, source, image_url, metadata, request_hash, attempts, result, error_code, error_message, created_at, updated_at, completed_at';

const iso = (ms: number): string => new Date(ms).toISOString();
const isoOrNull = (ms: number | null): string | null => (ms === null ? null : iso(ms));

export class SqliteScanStore implements ScanStore {
  readonly kind = 'sqlite' as const;
  private readonly db: Database.Database;

  constructor(dataDir: string) {
    fs.mkdirSync(dataDir, { recursive: true });
    this.db = new Database(path.join(dataDir, SQLITE_FILE));
    this.db.pragma('busy_timeout = 10000');
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    this.db.pragma('foreign_keys = ON');
  }

  async migrate(): Promise<void> {
    const db = this.db;
    db.transaction(() => {
      db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`);
      const applied = new Set(
        (db.prepare('SELECT version FROM schema_migrations').all() as Array<{ version: number }>).map((r) => r.version),
      );
      for (const migration of sqliteMigrations) {
        if (applied.has(migration.version)) continue;
        db.exec(migration.sql);
        db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)').run(
          migration.version,
          migration.name,
          new Date().toISOString(),
        );
      }
    }).immediate();
  }

  private log(id: string, at: number, event: string, message: string): void {
    this.db.prepare('INSERT INTO scan_logs (scan_id, at, event, message) VALUES (?, ?, ?, ?)').run(id, at, event, message);
  }

  private records(rows: ScanRow[]): ScanRecord[] {
    if (rows.length === 0) return [];
    const placeholders = rows.map(() => '?').join(', ');
    const logs = this.db
      .prepare(`SELECT scan_id, at, event, message FROM scan_logs WHERE scan_id IN (${placeholders}) ORDER BY seq`)
      .all(...rows.map((r) => r.id)) as LogRow[];
    return assembleRecords(
      rows.map((row) => ({
        id: row.id,
        ownerId: row.owner_id,
        status: row.status,
        source: row.source,
        imageUrl: row.image_url,
        metadata: JSON.parse(row.metadata) as Record<string, unknown>,
        createdAt: iso(row.created_at),
        updatedAt: iso(row.updated_at),
        completedAt: isoOrNull(row.completed_at),
        attempts: row.attempts,
        result: row.result === null ? null : (JSON.parse(row.result) as ScanResult),
        error: rowError(row.error_code, row.error_message),
      })),
      logs.map((log) => ({ scanId: log.scan_id, at: iso(log.at), event: log.event, message: log.message })),
    );
  }

  private row(id: string): ScanRow | undefined {
    return this.db.prepare(`SELECT ${SCAN_COLUMNS} FROM scans WHERE id = ?`).get(id) as ScanRow | undefined;
  }

  async create(scan: NewScan): Promise<CreateResult> {
    checkNewScan(scan);
    const db = this.db;
    const outcome = db.transaction((): { id: string; created: boolean } | { conflict: true } => {
      if (scan.idempotencyKey !== null) {
        const existing = db
          .prepare('SELECT id, request_hash FROM scans WHERE owner_id = ? AND idempotency_key = ?')
          .get(scan.ownerId, scan.idempotencyKey) as { id: string; request_hash: string } | undefined;
        if (existing !== undefined) {
          return existing.request_hash === scan.requestHash ? { id: existing.id, created: false } : { conflict: true };
        }
      }
      const now = Date.now();
      const id = newId(now);
      const { petId, customerId } = indexedMetadata(scan.metadata);
      db.prepare(
        `INSERT INTO scans (id, owner_id, status, source, image, image_url, metadata, pet_id, customer_id,
           idempotency_key, request_hash, attempts, created_at, updated_at)
         VALUES (?, ?, 'PENDING', ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)`,
      ).run(
        id,
        scan.ownerId,
        scan.source,
        scan.image,
        scan.imageUrl,
        JSON.stringify(scan.metadata),
        petId,
        customerId,
        scan.idempotencyKey,
        scan.requestHash,
        now,
        now,
      );
      this.log(id, now, 'submitted', submittedMessage(scan.source));
      return { id, created: true };
    }).immediate();
    if ('conflict' in outcome) return outcome;
    const [record] = this.records([this.row(outcome.id)!]);
    return { scan: record!, created: outcome.created };
  }

  async get(ownerId: string, id: string): Promise<ScanRecord | null> {
    const normalized = normalizeId(id);
    if (normalized === null) return null;
    const row = this.db.prepare(`SELECT ${SCAN_COLUMNS} FROM scans WHERE id = ? AND owner_id = ?`).get(normalized, ownerId) as
      | ScanRow
      | undefined;
    return row === undefined ? null : this.records([row])[0]!;
  }

  async list(ownerId: string, q: ListQuery): Promise<{ items: ScanRecord[]; nextCursor: string | null }> {
    checkListQuery(q);
    const where = ['owner_id = ?'];
    const params: Array<string | number> = [ownerId];
    if (q.petId !== undefined) {
      where.push('pet_id = ?');
      params.push(q.petId);
    }
    if (q.customerId !== undefined) {
      where.push('customer_id = ?');
      params.push(q.customerId);
    }
    if (q.cursor !== undefined) {
      const cursor = decodeCursor(q.cursor);
      where.push('(created_at, id) < (?, ?)');
      params.push(cursor.createdAtMs, cursor.id);
    }
    params.push(q.limit + 1);
    const rows = this.db
      .prepare(`SELECT ${SCAN_COLUMNS} FROM scans WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT ?`)
      .all(...params) as ScanRow[];
    const more = rows.length > q.limit;
    const items = this.records(rows.slice(0, q.limit));
    const last = items[items.length - 1];
    return { items, nextCursor: more && last !== undefined ? encodeCursor(last.createdAt, last.id) : null };
  }

  async claim(workerId: string, leaseMs: number, maxAttempts: number): Promise<ClaimedScan | null> {
    checkLease(leaseMs, maxAttempts);
    const db = this.db;
    return db.transaction((): ClaimedScan | null => {
      const now = Date.now();
      const exhausted = db
        .prepare(
          `SELECT id, attempts FROM scans
           WHERE status IN ('PENDING', 'PROCESSING') AND status = 'PROCESSING' AND lease_until < ? AND attempts >= ?`,
        )
        .all(now, maxAttempts) as Array<{ id: string; attempts: number }>;
      for (const scan of exhausted) {
        const message = exhaustedMessage(scan.attempts);
        db.prepare(
          `UPDATE scans SET status = 'FAILED', error_code = ?, error_message = ?, image = NULL, lease_until = NULL,
             completed_at = ?, updated_at = ? WHERE id = ?`,
        ).run(PROCESSING_FAILED, message, now, now, scan.id);
        this.log(scan.id, now, 'failed', `${PROCESSING_FAILED}: ${message}`);
      }
      const row = db
        .prepare(
          `SELECT id, owner_id, status, source, image, image_url, attempts FROM scans
           WHERE status IN ('PENDING', 'PROCESSING') AND (status = 'PENDING' OR (lease_until < ? AND attempts < ?))
           ORDER BY created_at, id LIMIT 1`,
        )
        .get(now, maxAttempts) as
        | { id: string; owner_id: string; status: ScanStatus; source: ScanSource; image: Buffer | null; image_url: string | null; attempts: number }
        | undefined;
      if (row === undefined) return null;
      const attempts = row.attempts + 1;
      db.prepare(
        `UPDATE scans SET status = 'PROCESSING', attempts = ?, worker_id = ?, lease_until = ?, updated_at = ? WHERE id = ?`,
      ).run(attempts, workerId, now + leaseMs, now, row.id);
      if (row.status === 'PROCESSING') this.log(row.id, now, 'lease_expired_requeued', requeuedMessage(row.attempts));
      this.log(row.id, now, 'claimed', claimedMessage(attempts));
      return { id: row.id, ownerId: row.owner_id, source: row.source, image: row.image, imageUrl: row.image_url, attempts };
    }).immediate();
  }

  async extendLease(id: string, workerId: string, leaseMs: number): Promise<boolean> {
    const normalized = normalizeId(id);
    if (normalized === null) return false;
    const now = Date.now();
    const info = this.db
      .prepare(
        `UPDATE scans SET lease_until = ?, updated_at = ? WHERE id = ? AND status = 'PROCESSING' AND worker_id = ?`,
      )
      .run(now + leaseMs, now, normalized, workerId);
    return info.changes === 1;
  }

  async appendLog(id: string, event: string, message: string): Promise<void> {
    const normalized = normalizeId(id);
    if (normalized === null) return;
    // Like the PostgreSQL backend: a line for a scan that no longer exists is dropped.
    this.db
      .prepare('INSERT INTO scan_logs (scan_id, at, event, message) SELECT id, ?, ?, ? FROM scans WHERE id = ?')
      .run(Date.now(), event, message, normalized);
  }

  private finish(rawId: string, workerId: string, set: string, values: unknown[], event: string, message: string): boolean {
    const id = normalizeId(rawId);
    if (id === null) return false;
    const db = this.db;
    return db.transaction((): boolean => {
      const now = Date.now();
      const info = db
        .prepare(
          `UPDATE scans SET ${set}, image = NULL, lease_until = NULL, completed_at = ?, updated_at = ?
           WHERE id = ? AND status = 'PROCESSING' AND worker_id = ?`,
        )
        .run(...values, now, now, id, workerId);
      if (info.changes !== 1) return false;
      this.log(id, now, event, message);
      return true;
    }).immediate();
  }

  async complete(id: string, workerId: string, result: ScanResult): Promise<boolean> {
    return this.finish(id, workerId, `status = 'COMPLETED', result = ?`, [JSON.stringify(result)], 'completed', 'Scan completed.');
  }

  async fail(id: string, workerId: string, error: ScanError): Promise<boolean> {
    return this.finish(
      id,
      workerId,
      `status = 'FAILED', error_code = ?, error_message = ?`,
      [error.code, error.message],
      'failed',
      `${error.code}: ${error.message}`,
    );
  }

  async purge(olderThan: Date): Promise<number> {
    const info = this.db
      .prepare(`DELETE FROM scans WHERE status IN ('COMPLETED', 'FAILED') AND completed_at < ?`)
      .run(olderThan.getTime());
    return info.changes;
  }

  async createCredential(name: string): Promise<{ id: string; keyId: string; secret: string }> {
    const cleanName = checkName(name);
    const id = newId();
    const keyId = newKeyId();
    const secret = newSecret();
    const secretHash = await hashSecret(secret);
    this.db
      .prepare('INSERT INTO scan_credentials (id, key_id, secret_hash, name, created_at) VALUES (?, ?, ?, ?, ?)')
      .run(id, keyId, secretHash, cleanName, Date.now());
    return { id, keyId, secret };
  }

  async listCredentials(): Promise<ScanCredentialInfo[]> {
    const rows = this.db
      .prepare('SELECT id, key_id, name, created_at, revoked_at FROM scan_credentials ORDER BY created_at, id')
      .all() as Array<{ id: string; key_id: string; name: string; created_at: number; revoked_at: number | null }>;
    return rows.map((r) => ({ id: r.id, keyId: r.key_id, name: r.name, createdAt: iso(r.created_at), revokedAt: isoOrNull(r.revoked_at) }));
  }

  async revokeCredential(keyIdOrId: string): Promise<boolean> {
    const id = normalizeId(keyIdOrId);
    const db = this.db;
    return db.transaction((): boolean => {
      const row = db.prepare('SELECT id FROM scan_credentials WHERE key_id = ? OR id = ?').get(keyIdOrId, id) as
        | { id: string }
        | undefined;
      if (row === undefined) return false;
      db.prepare('UPDATE scan_credentials SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(Date.now(), row.id);
      return true;
    }).immediate();
  }

  async verifyCredential(keyId: string, secret: string): Promise<string | null> {
    const row = this.db.prepare('SELECT id, secret_hash, revoked_at FROM scan_credentials WHERE key_id = ?').get(keyId) as
      | { id: string; secret_hash: string; revoked_at: number | null }
      | undefined;
    const usable = row !== undefined && row.revoked_at === null;
    const ok = await verifySecret(secret, usable ? row.secret_hash : null);
    return ok && usable ? row.id : null;
  }

  async createApiKey(name: string): Promise<{ id: string; key: string }> {
    const cleanName = checkName(name);
    const id = newId();
    const key = KeyRing.generateKey();
    this.db
      .prepare('INSERT INTO api_keys (id, name, digest, created_at) VALUES (?, ?, ?, ?)')
      .run(id, cleanName, sha256Hex(key), Date.now());
    return { id, key };
  }

  async listApiKeys(): Promise<ApiKeyInfo[]> {
    const rows = this.db
      .prepare('SELECT id, name, created_at, revoked_at FROM api_keys ORDER BY created_at, id')
      .all() as Array<{ id: string; name: string; created_at: number; revoked_at: number | null }>;
    return rows.map((r) => ({ id: r.id, name: r.name, createdAt: iso(r.created_at), revokedAt: isoOrNull(r.revoked_at) }));
  }

  async revokeApiKey(id: string): Promise<boolean> {
    const normalized = normalizeId(id);
    if (normalized === null) return false;
    const db = this.db;
    return db.transaction((): boolean => {
      const row = db.prepare('SELECT id FROM api_keys WHERE id = ?').get(normalized);
      if (row === undefined) return false;
      db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(Date.now(), normalized);
      return true;
    }).immediate();
  }

  async activeApiKeyDigests(): Promise<string[]> {
    const rows = this.db.prepare('SELECT digest FROM api_keys WHERE revoked_at IS NULL ORDER BY created_at, id').all() as Array<{
      digest: string;
    }>;
    return rows.map((r) => r.digest);
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}
