// The webhook outbox: one delivery per finished scan that has a callback URL, written in the
// transaction that finishes the scan (enqueueDelivery), then claimed by dispatchers under a lease.
// Written once for both databases over the SQL seam (sql.ts).
//
// Lifecycle: pending -> delivered | failed. A pending delivery is due at next_attempt_at; a claim
// takes it for one attempt until lease_until (one instance at a time), and the attempt's outcome
// either ends it or schedules the next attempt. A claim whose lease ran out (its instance died
// mid-attempt) is due again at once; after `maxAttempts` such claims it is failed.
import { randomUUID } from 'node:crypto';
import { normalizeId } from './records';
import { isoOrNull, placeholders, type SqlDb } from './sql';
import type { AttemptOutcome, ClaimedDelivery, DeliveryState, WebhookDelivery, WebhookEvent } from './types';

interface DeliveryRow {
  scan_id: string;
  webhook_id: string;
  event: WebhookEvent;
  url: string;
  state: DeliveryState;
  attempts: number;
  next_attempt_at: unknown;
  last_attempt_at: unknown;
  last_status: number | null;
  last_error: string | null;
  created_at: unknown;
  finished_at: unknown;
}

const COLUMNS = 'scan_id, webhook_id, event, url, state, attempts, next_attempt_at, last_attempt_at, last_status, last_error, created_at, finished_at';

/** A new `webhook-id`: `msg_` and 32 hex digits. */
const newWebhookId = (): string => `msg_${randomUUID().replaceAll('-', '')}`;

/** The owner's callback URL of a scan: its own, else its credential's default. */
const CALLBACK_URL = 'COALESCE(s.callback_url, c.webhook_url)';

/**
 * Inside the transaction that finishes scan `scanId`: its delivery, when it has a callback URL
 * (the scan's own, else its credential's default). Returns whether one was written.
 */
export async function enqueueDelivery(tx: SqlDb, scanId: string, event: WebhookEvent): Promise<boolean> {
  const { now } = tx.dialect;
  const written = await tx.run(
    `INSERT INTO webhook_deliveries (scan_id, webhook_id, event, url, state, attempts, next_attempt_at, created_at)
     SELECT s.id, $2, $3, ${CALLBACK_URL}, 'pending', 0, ${now}, ${now}
     FROM scans s LEFT JOIN scan_credentials c ON CAST(c.id AS text) = s.owner_id
     WHERE s.id = $1 AND ${CALLBACK_URL} IS NOT NULL`,
    [scanId, newWebhookId(), event],
  );
  return written === 1;
}

export type RedeliverResult = 'requeued' | 'created' | 'not_found' | 'not_finished' | 'no_url';

export class WebhookOutbox {
  constructor(private readonly db: SqlDb) {}

  private get d() {
    return this.db.dialect;
  }

  private present(row: DeliveryRow): WebhookDelivery {
    return {
      webhookId: row.webhook_id,
      event: row.event,
      url: row.url,
      state: row.state,
      attempts: row.attempts,
      nextAttemptAt: row.state === 'pending' ? this.d.iso(row.next_attempt_at) : null,
      lastAttemptAt: isoOrNull(this.d, row.last_attempt_at),
      lastStatus: row.last_status,
      lastError: row.last_error,
      createdAt: this.d.iso(row.created_at),
      finishedAt: isoOrNull(this.d, row.finished_at),
    };
  }

  /** Deliveries of these scans, by scan id (scans without one are absent). */
  async ofScans(scanIds: string[]): Promise<Map<string, WebhookDelivery>> {
    const out = new Map<string, WebhookDelivery>();
    if (scanIds.length === 0) return out;
    const rows = await this.db.query<DeliveryRow>(`SELECT ${COLUMNS} FROM webhook_deliveries WHERE scan_id IN (${placeholders(1, scanIds.length)})`, scanIds);
    for (const row of rows) out.set(row.scan_id, this.present(row));
    return out;
  }

  /**
   * Takes up to `limit` due deliveries for one attempt each, leased to `workerId` until now +
   * leaseMs, skipping those whose URL `skip` says no to (its receiver has enough in flight here).
   * First fails those whose lease ran out after `maxAttempts` attempts.
   */
  async claim(workerId: string, leaseMs: number, maxAttempts: number, limit: number, skip: (url: string) => boolean): Promise<ClaimedDelivery[]> {
    if (limit < 1) return [];
    const { now, lockSkipLocked } = this.d;
    const due = `state = 'pending' AND next_attempt_at <= ${now} AND (lease_until IS NULL OR lease_until < ${now})`;
    // Idle dispatchers ask often: a read first, so that nothing due costs no write transaction.
    if ((await this.db.query(`SELECT 1 AS due FROM webhook_deliveries WHERE ${due} LIMIT 1`)).length === 0) return [];
    return this.db.transaction(async (tx) => {
      const lost = `state = 'pending' AND lease_until IS NOT NULL AND lease_until < ${now}`;
      const exhausted = await tx.query<{ scan_id: string; attempts: number }>(
        `SELECT scan_id, attempts FROM webhook_deliveries WHERE ${lost} AND attempts >= $1${lockSkipLocked}`,
        [maxAttempts],
      );
      for (const row of exhausted) {
        const error = `attempt ${row.attempts} did not report an outcome before its lease ran out`;
        await tx.run(
          `UPDATE webhook_deliveries SET state = 'failed', lease_until = NULL, worker_id = NULL, last_error = $2, finished_at = ${now} WHERE scan_id = $1`,
          [row.scan_id, error],
        );
        await this.log(tx, row.scan_id, 'webhook_failed', `Webhook delivery given up: ${error}.`);
      }
      const candidates = await tx.query<{ scan_id: string; owner_id: string; webhook_id: string; event: WebhookEvent; url: string; attempts: number; lease_until: unknown }>(
        `SELECT scan_id, (SELECT owner_id FROM scans s WHERE s.id = d.scan_id) AS owner_id, webhook_id, event, url, attempts, lease_until
         FROM webhook_deliveries d
         WHERE ${due}
         ORDER BY next_attempt_at, scan_id LIMIT $1${lockSkipLocked}`,
        [limit * 4],
      );
      const claimed: ClaimedDelivery[] = [];
      for (const row of candidates) {
        if (claimed.length >= limit) break;
        if (skip(row.url)) continue;
        const attempt = row.attempts + 1;
        await tx.run(
          `UPDATE webhook_deliveries SET attempts = $2, worker_id = $3, lease_until = ${this.d.plusMs(now, '$4')} WHERE scan_id = $1`,
          [row.scan_id, attempt, workerId, leaseMs],
        );
        claimed.push({ scanId: row.scan_id, ownerId: row.owner_id, webhookId: row.webhook_id, event: row.event, url: row.url, attempt, requeued: row.lease_until !== null });
      }
      return claimed;
    });
  }

  /**
   * Records the outcome of an attempt this worker still holds, with its log line, in one
   * transaction. False when it no longer holds it (redelivered meanwhile, or taken after its lease).
   */
  settle(claimed: ClaimedDelivery, workerId: string, outcome: AttemptOutcome): Promise<boolean> {
    const { now } = this.d;
    const set =
      outcome.kind === 'retry'
        ? `next_attempt_at = ${this.d.plusMs(now, '$6')}`
        : `state = '${outcome.kind}', finished_at = ${now}`;
    const values = outcome.kind === 'retry' ? [outcome.retryInMs] : [];
    return this.db.transaction(async (tx) => {
      const changed = await tx.run(
        `UPDATE webhook_deliveries SET ${set}, worker_id = NULL, lease_until = NULL, last_attempt_at = ${now}, last_status = $4, last_error = $5
         WHERE scan_id = $1 AND worker_id = $2 AND attempts = $3 AND state = 'pending'`,
        [claimed.scanId, workerId, claimed.attempt, outcome.status, outcome.kind === 'delivered' ? null : outcome.error, ...values],
      );
      if (changed !== 1) return false;
      await this.log(tx, claimed.scanId, `webhook_${outcome.kind}`, outcome.logMessage);
      return true;
    });
  }

  /** A log line of the delivery's scan, inside a transaction of this store. */
  private log(tx: SqlDb, scanId: string, event: string, message: string): Promise<number> {
    return tx.run(`INSERT INTO scan_logs (scan_id, at, event, message) VALUES ($1, ${this.d.now}, $2, $3)`, [scanId, event, message]);
  }

  /**
   * Sends a finished scan's event again (operator's request): its delivery, with the same
   * webhook-id, is due now with a fresh retry schedule; a scan that had no callback URL when it
   * finished gets a delivery if it has one now.
   */
  redeliver(rawScanId: string): Promise<RedeliverResult> {
    const scanId = normalizeId(rawScanId);
    if (scanId === null) return Promise.resolve('not_found');
    const { now } = this.d;
    return this.db.transaction(async (tx) => {
      const [scan] = await tx.query<{ status: string }>('SELECT status FROM scans WHERE id = $1', [scanId]);
      if (scan === undefined) return 'not_found';
      if (scan.status !== 'COMPLETED' && scan.status !== 'FAILED') return 'not_finished';
      const requeued = await tx.run(
        `UPDATE webhook_deliveries SET state = 'pending', attempts = 0, next_attempt_at = ${now}, worker_id = NULL, lease_until = NULL, finished_at = NULL
         WHERE scan_id = $1`,
        [scanId],
      );
      let result: RedeliverResult = 'requeued';
      if (requeued === 0) {
        if (!(await enqueueDelivery(tx, scanId, scan.status === 'COMPLETED' ? 'scan.completed' : 'scan.failed'))) return 'no_url';
        result = 'created';
      }
      await this.log(tx, scanId, 'webhook_redeliver', 'An operator asked for the webhook to be sent again.');
      return result;
    });
  }

  /**
   * Deliveries not yet ended, for the metrics: due (waiting for a dispatcher), scheduled (a retry
   * later) and in_flight (an attempt under way).
   */
  async depth(): Promise<{ due: number; scheduled: number; in_flight: number }> {
    const { now } = this.d;
    const rows = await this.db.query<{ kind: string; n: number | string }>(
      `SELECT CASE WHEN lease_until IS NOT NULL AND lease_until >= ${now} THEN 'in_flight'
                   WHEN next_attempt_at <= ${now} THEN 'due' ELSE 'scheduled' END AS kind, COUNT(*) AS n
       FROM webhook_deliveries WHERE state = 'pending' GROUP BY 1`,
    );
    const count = (kind: string) => Number(rows.find((r) => r.kind === kind)?.n ?? 0);
    return { due: count('due'), scheduled: count('scheduled'), in_flight: count('in_flight') };
  }
}
