// Scan credentials (key id + secret): only the secret's scrypt hash is stored. Written once for
// both databases over the SQL seam (sql.ts).
import { checkName, newId, normalizeId } from './records';
import { hashSecret, newKeyId, newSecret, verifySecret } from './secrets';
import { isoOrNull, type SqlDb } from './sql';
import type { ScanCredentialInfo } from './types';

export class ScanCredentials {
  constructor(private readonly db: SqlDb) {}

  /** New scan credential; the secret is returned once and only its scrypt hash is stored. */
  async create(name: string): Promise<{ id: string; keyId: string; secret: string }> {
    const cleanName = checkName(name);
    const id = newId();
    const keyId = newKeyId();
    const secret = newSecret();
    const secretHash = await hashSecret(secret);
    await this.db.run(`INSERT INTO scan_credentials (id, key_id, secret_hash, name, created_at) VALUES ($1, $2, $3, $4, ${this.db.dialect.now})`, [
      id,
      keyId,
      secretHash,
      cleanName,
    ]);
    return { id, keyId, secret };
  }

  async list(): Promise<ScanCredentialInfo[]> {
    const rows = await this.db.query<{ id: string; key_id: string; name: string; created_at: unknown; revoked_at: unknown }>(
      'SELECT id, key_id, name, created_at, revoked_at FROM scan_credentials ORDER BY created_at, id',
    );
    const d = this.db.dialect;
    return rows.map((r) => ({ id: r.id, keyId: r.key_id, name: r.name, createdAt: d.iso(r.created_at), revokedAt: isoOrNull(d, r.revoked_at) }));
  }

  /** Revokes by key id or credential id; true if it exists (revoked now or before). */
  revoke(keyIdOrId: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const [row] = await tx.query<{ id: string }>(
        `SELECT id FROM scan_credentials WHERE key_id = $1 OR id = ${tx.dialect.uuidParam('$2')}`,
        [keyIdOrId, normalizeId(keyIdOrId)],
      );
      if (row === undefined) return false;
      await tx.run(`UPDATE scan_credentials SET revoked_at = ${tx.dialect.now} WHERE id = $1 AND revoked_at IS NULL`, [row.id]);
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
