// Scan credentials (key id + secret): only the secret's scrypt hash is stored. Each credential also
// has a webhook signing secret, kept as issued (signing needs it); after a rotation the previous one
// stays valid (deliveries carry both signatures) until its overlap ends. Written once for both
// databases over the SQL seam (sql.ts).
import { checkName, newId, normalizeId } from './records';
import { hashSecret, newKeyId, newSecret, newWebhookSecret, verifySecret } from './secrets';
import { isoOrNull, type SqlDb } from './sql';
import type { ScanCredentialInfo } from './types';

export class ScanCredentials {
  constructor(private readonly db: SqlDb) {}

  /**
   * New scan credential with its webhook signing secret and (optionally) a default callback URL,
   * checked by the caller. The secret is returned once and only its scrypt hash is stored.
   */
  async create(name: string, webhookUrl: string | null = null): Promise<{ id: string; keyId: string; secret: string; webhookSecret: string }> {
    const cleanName = checkName(name);
    const id = newId();
    const keyId = newKeyId();
    const secret = newSecret();
    const webhookSecret = newWebhookSecret();
    const secretHash = await hashSecret(secret);
    await this.db.run(
      `INSERT INTO scan_credentials (id, key_id, secret_hash, name, webhook_url, webhook_secret, created_at) VALUES ($1, $2, $3, $4, $5, $6, ${this.db.dialect.now})`,
      [id, keyId, secretHash, cleanName, webhookUrl, webhookSecret],
    );
    return { id, keyId, secret, webhookSecret };
  }

  async list(): Promise<ScanCredentialInfo[]> {
    const rows = await this.db.query<{ id: string; key_id: string; name: string; webhook_url: string | null; created_at: unknown; revoked_at: unknown }>(
      'SELECT id, key_id, name, webhook_url, created_at, revoked_at FROM scan_credentials ORDER BY created_at, id',
    );
    const d = this.db.dialect;
    return rows.map((r) => ({
      id: r.id,
      keyId: r.key_id,
      name: r.name,
      webhookUrl: r.webhook_url,
      createdAt: d.iso(r.created_at),
      revokedAt: isoOrNull(d, r.revoked_at),
    }));
  }

  /** The credential id of a key id or credential id, or null. */
  private async idOf(db: SqlDb, keyIdOrId: string): Promise<string | null> {
    const [row] = await db.query<{ id: string }>(`SELECT id FROM scan_credentials WHERE key_id = $1 OR id = ${db.dialect.uuidParam('$2')}`, [
      keyIdOrId,
      normalizeId(keyIdOrId),
    ]);
    return row?.id ?? null;
  }

  /** Sets (or with null clears) the default callback URL, checked by the caller; false when there is no such credential. */
  async setWebhookUrl(keyIdOrId: string, url: string | null): Promise<boolean> {
    const id = await this.idOf(this.db, keyIdOrId);
    return id !== null && (await this.db.run('UPDATE scan_credentials SET webhook_url = $2 WHERE id = $1', [id, url])) === 1;
  }

  /**
   * A new webhook signing secret (returned once); the current one stays valid for `overlapMs`
   * (deliveries are signed with both meanwhile). Null when there is no such credential.
   */
  rotateWebhookSecret(keyIdOrId: string, overlapMs: number): Promise<{ webhookSecret: string; previousValidUntil: string | null } | null> {
    return this.db.transaction(async (tx) => {
      const id = await this.idOf(tx, keyIdOrId);
      if (id === null) return null;
      const webhookSecret = newWebhookSecret();
      const { now } = tx.dialect;
      await tx.run(
        `UPDATE scan_credentials SET webhook_previous_secret = webhook_secret, webhook_previous_until = CASE WHEN webhook_secret IS NULL THEN NULL ELSE ${tx.dialect.plusMs(now, '$3')} END,
           webhook_secret = $2 WHERE id = $1`,
        [id, webhookSecret, overlapMs],
      );
      const [row] = await tx.query<{ until: unknown }>('SELECT webhook_previous_until AS until FROM scan_credentials WHERE id = $1', [id]);
      return { webhookSecret, previousValidUntil: isoOrNull(tx.dialect, row?.until ?? null) };
    });
  }

  /** Signing secrets of a credential's webhooks now valid, newest first (none for a credential from before webhooks until rotated). */
  async webhookSecrets(id: string): Promise<string[]> {
    const [row] = await this.db.query<{ current: string | null; previous: string | null }>(
      `SELECT webhook_secret AS current, CASE WHEN webhook_previous_until > ${this.db.dialect.now} THEN webhook_previous_secret END AS previous
       FROM scan_credentials WHERE id = ${this.db.dialect.uuidParam('$1')}`,
      [normalizeId(id)],
    );
    return row ? [row.current, row.previous].filter((s): s is string => s !== null) : [];
  }

  /** Revokes by key id or credential id; true if it exists (revoked now or before). */
  revoke(keyIdOrId: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const id = await this.idOf(tx, keyIdOrId);
      if (id === null) return false;
      await tx.run(`UPDATE scan_credentials SET revoked_at = ${tx.dialect.now} WHERE id = $1 AND revoked_at IS NULL`, [id]);
      return true;
    });
  }

  /**
   * The usable credential of a key id (it exists and is not revoked), or null: one indexed lookup,
   * no scrypt. `matches` runs scrypt on a secret.
   */
  async find(keyId: string): Promise<{ id: string; matches(secret: string): Promise<boolean> } | null> {
    const [row] = await this.db.query<{ id: string; secret_hash: string; revoked_at: unknown }>(
      'SELECT id, secret_hash, revoked_at FROM scan_credentials WHERE key_id = $1',
      [keyId],
    );
    if (row === undefined || row.revoked_at !== null) return null;
    return { id: row.id, matches: (secret) => verifySecret(secret, row.secret_hash) };
  }

  /** Credential id when the key id exists, is not revoked and the secret matches; else null. */
  async verify(keyId: string, secret: string): Promise<string | null> {
    const credential = await this.find(keyId);
    return credential && (await credential.matches(secret)) ? credential.id : null;
  }
}
