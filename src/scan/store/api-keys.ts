// v1/v2 API keys issued with the CLI: stored as sha256 hex digests. Written once for both
// databases over the SQL seam (sql.ts).
import { KeyRing } from '../../http/auth';
import { checkName, newId, normalizeId } from './records';
import { sha256Hex } from './secrets';
import { isoOrNull, type SqlDb } from './sql';
import type { ApiKeyInfo } from './types';

export class ApiKeys {
  constructor(private readonly db: SqlDb) {}

  /** New key (format of KeyRing.generateKey); returned once, stored as its sha256 hex digest. */
  async create(name: string): Promise<{ id: string; key: string }> {
    const cleanName = checkName(name);
    const id = newId();
    const key = KeyRing.generateKey();
    await this.db.run(`INSERT INTO api_keys (id, name, digest, created_at) VALUES ($1, $2, $3, ${this.db.dialect.now})`, [id, cleanName, sha256Hex(key)]);
    return { id, key };
  }

  async list(): Promise<ApiKeyInfo[]> {
    const rows = await this.db.query<{ id: string; name: string; created_at: unknown; revoked_at: unknown }>(
      'SELECT id, name, created_at, revoked_at FROM api_keys ORDER BY created_at, id',
    );
    const d = this.db.dialect;
    return rows.map((r) => ({ id: r.id, name: r.name, createdAt: d.iso(r.created_at), revokedAt: isoOrNull(d, r.revoked_at) }));
  }

  /** True if the key exists (revoked now or before). */
  async revoke(id: string): Promise<boolean> {
    const normalized = normalizeId(id);
    if (normalized === null) return false;
    return this.db.transaction(async (tx) => {
      const [row] = await tx.query<{ id: string }>('SELECT id FROM api_keys WHERE id = $1', [normalized]);
      if (row === undefined) return false;
      await tx.run(`UPDATE api_keys SET revoked_at = ${tx.dialect.now} WHERE id = $1 AND revoked_at IS NULL`, [normalized]);
      return true;
    });
  }

  /** sha256 hex digests of the keys not revoked, for KeyRing.setIssuedDigests. */
  async activeDigests(): Promise<string[]> {
    const rows = await this.db.query<{ digest: string }>('SELECT digest FROM api_keys WHERE revoked_at IS NULL ORDER BY created_at, id');
    return rows.map((r) => r.digest);
  }
}
