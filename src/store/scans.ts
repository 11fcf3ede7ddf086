// The scan queue: scans with their logs, claimed by workers under a lease. Written once for both
// databases over the SQL seam (sql.ts).
//
// Lifecycle: PENDING -> PROCESSING (claimed by a worker, with a lease) -> COMPLETED | FAILED.
// A PROCESSING scan whose lease ran out (the worker died or stalled) is claimable again, exactly
// like a PENDING one; every claim counts one attempt, and a scan whose lease ran out after
// `maxAttempts` attempts becomes FAILED with code `processing_failed`. The transaction that
// finishes a scan also writes its webhook delivery (webhooks.ts) when it has a callback URL.
import {
  PROCESSING_FAILED,
  checkLease,
  checkListQuery,
  checkNewScan,
  claimedMessage,
  decodeCursor,
  encodeCursor,
  exhaustedMessage,
  indexedMetadata,
  newId,
  normalizeId,
  requeuedMessage,
  submittedMessage,
} from './records';
import { isoOrNull, placeholders, type SqlDb, type SqlValue } from './sql';
import { enqueueDelivery } from './webhooks';
import type { ClaimedScan, CreateResult, ListQuery, NewScan, ScanError, ScanLogEntry, ScanRecord, ScanResult, ScanSource, ScanStatus } from './types';

interface ScanRow {
  id: string;
  owner_id: string;
  status: ScanStatus;
  source: ScanSource;
  image_url: string | null;
  metadata: unknown;
  attempts: number;
  result: unknown;
  error_code: string | null;
  error_message: string | null;
  created_at: unknown;
  updated_at: unknown;
  completed_at: unknown;
}

/** How long an Idempotency-Key names its scan; after that the key is free again. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;

const COLUMNS =
  'id, owner_id, status, source, image_url, metadata, attempts, result, error_code, error_message, created_at, updated_at, completed_at';

export class ScanQueue {
  constructor(private readonly db: SqlDb) {}

  private get d() {
    return this.db.dialect;
  }

  private log(db: SqlDb, id: string, event: string, message: string): Promise<number> {
    return db.run(`INSERT INTO scan_logs (scan_id, at, event, message) VALUES ($1, ${this.d.now}, $2, $3)`, [id, event, message]);
  }

  /** Rows joined with their logs (in log order) into records. */
  private async records(rows: ScanRow[], db: SqlDb = this.db): Promise<ScanRecord[]> {
    if (rows.length === 0) return [];
    const logs = await db.query<{ scan_id: string; at: unknown; event: string; message: string }>(
      `SELECT scan_id, at, event, message FROM scan_logs WHERE scan_id IN (${placeholders(1, rows.length)}) ORDER BY seq`,
      rows.map((r) => r.id),
    );
    const byScan = new Map<string, ScanLogEntry[]>();
    for (const log of logs) {
      let list = byScan.get(log.scan_id);
      if (list === undefined) byScan.set(log.scan_id, (list = []));
      list.push({ at: this.d.iso(log.at), event: log.event, message: log.message });
    }
    return rows.map((row) => ({
      id: row.id,
      ownerId: row.owner_id,
      status: row.status,
      source: row.source,
      imageUrl: row.image_url,
      metadata: this.d.json<Record<string, unknown>>(row.metadata),
      createdAt: this.d.iso(row.created_at),
      updatedAt: this.d.iso(row.updated_at),
      completedAt: isoOrNull(this.d, row.completed_at),
      attempts: row.attempts,
      result: row.result === null ? null : this.d.json<ScanResult>(row.result),
      error: row.error_code === null ? null : { code: row.error_code, message: row.error_message ?? '' },
      logs: byScan.get(row.id) ?? [],
    }));
  }

  /**
   * Stores a new PENDING scan. With an idempotency key this owner used within IDEMPOTENCY_WINDOW_MS:
   * the existing scan with `created: false` when the request hash matches, `{ conflict: true }` when
   * it differs. An older use of the key is forgotten (the scan stays, without its key).
   */
  async create(scan: NewScan): Promise<CreateResult> {
    checkNewScan(scan);
    const { petId, customerId } = indexedMetadata(scan.metadata);
    const now = this.d.now;
    // Two tries: the scan holding the key could be purged between the insert and the lookup.
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const inserted = await this.db.transaction(async (tx) => {
        if (scan.idempotencyKey !== null) {
          await tx.run(
            `UPDATE scans SET idempotency_key = NULL WHERE owner_id = $1 AND idempotency_key = $2 AND created_at < ${this.d.plusMs(now, '$3')}`,
            [scan.ownerId, scan.idempotencyKey, -IDEMPOTENCY_WINDOW_MS],
          );
        }
        const rows = await tx.query<ScanRow>(
          `INSERT INTO scans (id, owner_id, status, source, image, image_url, metadata, pet_id, customer_id,
             idempotency_key, request_hash, callback_url, attempts, created_at, updated_at)
           VALUES ($1, $2, 'PENDING', $3, $4, $5, $6, $7, $8, $9, $10, $11, 0, ${now}, ${now})
           ON CONFLICT (owner_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
           RETURNING ${COLUMNS}`,
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
            scan.callbackUrl,
          ],
        );
        const row = rows[0];
        if (row === undefined) return null;
        await tx.run(`INSERT INTO scan_logs (scan_id, at, event, message) SELECT id, created_at, 'submitted', $2 FROM scans WHERE id = $1`, [
          row.id,
          submittedMessage(scan.source),
        ]);
        return (await this.records([row], tx))[0]!;
      });
      if (inserted !== null) return { scan: inserted, created: true };
      const [existing] = await this.db.query<ScanRow & { request_hash: string }>(
        `SELECT ${COLUMNS}, request_hash FROM scans WHERE owner_id = $1 AND idempotency_key = $2`,
        [scan.ownerId, scan.idempotencyKey],
      );
      if (existing === undefined) continue;
      if (existing.request_hash !== scan.requestHash) return { conflict: true };
      return { scan: (await this.records([existing]))[0]!, created: false };
    }
    throw new Error('idempotent create: the scan holding the key vanished twice');
  }

  /** The owner's scan, or null (unknown id, malformed id, or another owner's scan). */
  async get(ownerId: string, id: string): Promise<ScanRecord | null> {
    const normalized = normalizeId(id);
    if (normalized === null) return null;
    const rows = await this.db.query<ScanRow>(`SELECT ${COLUMNS} FROM scans WHERE id = $1 AND owner_id = $2`, [normalized, ownerId]);
    return rows.length === 0 ? null : (await this.records(rows))[0]!;
  }

  /** Newest first (createdAt desc, id desc). Throws InvalidCursorError / RangeError on bad input. */
  async list(ownerId: string, q: ListQuery): Promise<{ items: ScanRecord[]; nextCursor: string | null }> {
    checkListQuery(q);
    const params: SqlValue[] = [ownerId];
    const where = ['owner_id = $1'];
    const add = (clause: (p: string) => string, value: SqlValue) => {
      params.push(value);
      where.push(clause(`$${params.length}`));
    };
    if (q.petId !== undefined) add((p) => `pet_id = ${p}`, q.petId);
    if (q.customerId !== undefined) add((p) => `customer_id = ${p}`, q.customerId);
    if (q.cursor !== undefined) {
      const cursor = decodeCursor(q.cursor);
      params.push(this.d.timeValue(cursor.createdAt), cursor.id);
      where.push(`(created_at, id) < (${this.d.timeParam(`$${params.length - 1}`)}, ${this.d.uuidParam(`$${params.length}`)})`);
    }
    params.push(q.limit + 1);
    const rows = await this.db.query<ScanRow>(
      `SELECT ${COLUMNS} FROM scans WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $${params.length}`,
      params,
    );
    const more = rows.length > q.limit;
    const items = await this.records(rows.slice(0, q.limit));
    const last = items[items.length - 1];
    return { items, nextCursor: more && last !== undefined ? encodeCursor(last.createdAt, last.id) : null };
  }

  /**
   * Takes the oldest claimable scan (PENDING, or PROCESSING with an expired lease) and marks it
   * PROCESSING for `workerId` until now + leaseMs. First fails (processing_failed) every scan whose
   * lease expired after `maxAttempts` attempts. Null when there is nothing to do.
   */
  async claim(workerId: string, leaseMs: number, maxAttempts: number): Promise<ClaimedScan | null> {
    checkLease(leaseMs, maxAttempts);
    const { now, lockSkipLocked } = this.d;
    // Idle workers ask often: a read first, so that nothing to claim or fail costs no write transaction.
    const due = `status IN ('PENDING', 'PROCESSING') AND (status = 'PENDING' OR lease_until < ${now})`;
    if ((await this.db.query(`SELECT 1 AS due FROM scans WHERE ${due} LIMIT 1`)).length === 0) return null;
    return this.db.transaction(async (tx) => {
      // `status IN (...)` first, so the partial queue index serves these lookups.
      const exhausted = await tx.query<{ id: string; attempts: number }>(
        `SELECT id, attempts FROM scans
         WHERE status IN ('PENDING', 'PROCESSING') AND status = 'PROCESSING' AND lease_until < ${now} AND attempts >= $1${lockSkipLocked}`,
        [maxAttempts],
      );
      for (const scan of exhausted) {
        const message = exhaustedMessage(scan.attempts);
        await tx.run(
          `UPDATE scans SET status = 'FAILED', error_code = $2, error_message = $3, image = NULL, lease_until = NULL,
             completed_at = ${now}, updated_at = ${now} WHERE id = $1`,
          [scan.id, PROCESSING_FAILED, message],
        );
        await this.log(tx, scan.id, 'failed', `${PROCESSING_FAILED}: ${message}`);
        await enqueueDelivery(tx, scan.id, 'scan.failed');
      }
      const [picked] = await tx.query<{ id: string; owner_id: string; status: ScanStatus; source: ScanSource; image: Buffer | null; image_url: string | null; attempts: number }>(
        `SELECT id, owner_id, status, source, image, image_url, attempts FROM scans
         WHERE status IN ('PENDING', 'PROCESSING') AND (status = 'PENDING' OR (lease_until < ${now} AND attempts < $1))
         ORDER BY created_at, id LIMIT 1${lockSkipLocked}`,
        [maxAttempts],
      );
      if (picked === undefined) return null;
      const attempts = picked.attempts + 1;
      await tx.run(
        `UPDATE scans SET status = 'PROCESSING', attempts = $2, worker_id = $3, lease_until = ${this.d.plusMs(now, '$4')}, updated_at = ${now}
         WHERE id = $1`,
        [picked.id, attempts, workerId, leaseMs],
      );
      if (picked.status === 'PROCESSING') await this.log(tx, picked.id, 'lease_expired_requeued', requeuedMessage(picked.attempts));
      await this.log(tx, picked.id, 'claimed', claimedMessage(attempts));
      return { id: picked.id, ownerId: picked.owner_id, source: picked.source, image: picked.image, imageUrl: picked.image_url, attempts };
    });
  }

  /** Pushes the lease of a scan this worker still holds; false if it no longer holds it. */
  async extendLease(id: string, workerId: string, leaseMs: number): Promise<boolean> {
    const normalized = normalizeId(id);
    if (normalized === null) return false;
    const { now } = this.d;
    const changed = await this.db.run(
      `UPDATE scans SET lease_until = ${this.d.plusMs(now, '$3')}, updated_at = ${now}
       WHERE id = $1 AND status = 'PROCESSING' AND worker_id = $2`,
      [normalized, workerId, leaseMs],
    );
    return changed === 1;
  }

  /** Adds a log line; a line for a scan that no longer exists is dropped. */
  async appendLog(id: string, event: string, message: string): Promise<void> {
    const normalized = normalizeId(id);
    if (normalized === null) return;
    await this.db.run(`INSERT INTO scan_logs (scan_id, at, event, message) SELECT id, ${this.d.now}, $2, $3 FROM scans WHERE id = $1`, [
      normalized,
      event,
      message,
    ]);
  }

  /** The state change of a finished scan, its log line and its webhook delivery, in one transaction. */
  private async finish(rawId: string, workerId: string, set: string, values: SqlValue[], event: 'completed' | 'failed', message: string): Promise<boolean> {
    const id = normalizeId(rawId);
    if (id === null) return false;
    const { now } = this.d;
    return this.db.transaction(async (tx) => {
      const changed = await tx.run(
        `UPDATE scans SET ${set}, image = NULL, lease_until = NULL, completed_at = ${now}, updated_at = ${now}
         WHERE id = $1 AND status = 'PROCESSING' AND worker_id = $2`,
        [id, workerId, ...values],
      );
      if (changed !== 1) return false;
      await tx.run(`INSERT INTO scan_logs (scan_id, at, event, message) SELECT id, completed_at, $2, $3 FROM scans WHERE id = $1`, [id, event, message]);
      await enqueueDelivery(tx, id, `scan.${event}`);
      return true;
    });
  }

  /**
   * COMPLETED with the result; drops the image bytes. False when `workerId` no longer holds the
   * scan (another worker claimed it after the lease expired, or it already finished).
   */
  complete(id: string, workerId: string, result: ScanResult): Promise<boolean> {
    return this.finish(id, workerId, `status = 'COMPLETED', result = $3`, [JSON.stringify(result)], 'completed', 'Scan completed.');
  }

  /** FAILED with the error; drops the image bytes. False as for complete. */
  fail(id: string, workerId: string, error: ScanError): Promise<boolean> {
    return this.finish(id, workerId, `status = 'FAILED', error_code = $3, error_message = $4`, [error.code, error.message], 'failed', `${error.code}: ${error.message}`);
  }

  /** Scans waiting for a worker (PENDING) and being worked on (PROCESSING), for the metrics. */
  async queueDepth(): Promise<{ pending: number; processing: number }> {
    const rows = await this.db.query<{ status: ScanStatus; n: number | string }>(
      `SELECT status, COUNT(*) AS n FROM scans WHERE status IN ('PENDING', 'PROCESSING') GROUP BY status`,
    );
    const count = (status: ScanStatus) => Number(rows.find((r) => r.status === status)?.n ?? 0);
    return { pending: count('PENDING'), processing: count('PROCESSING') };
  }

  /** Deletes COMPLETED/FAILED scans (with their logs) finished before `olderThan`; returns how many. */
  purge(olderThan: Date): Promise<number> {
    return this.db.run(`DELETE FROM scans WHERE status IN ('COMPLETED', 'FAILED') AND completed_at < ${this.d.timeParam('$1')}`, [
      this.d.timeValue(olderThan.toISOString()),
    ]);
  }
}
