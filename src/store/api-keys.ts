// Keys issued with the CLI, stored as sha256 hex digests: v1/v2 API keys (scope `api`) and keys of
// the admin listener (scope `admin`); a key of one scope is never accepted for the other. Written once for both
// databases over the SQL seam (sql.ts). A serving process keeps each scope's issued keys fresh
// (keepIssuedKeys).
import { log } from '../log';
import { checkName, newId, normalizeId } from './records';
import { newApiKey, sha256Hex } from './secrets';
import { GENERATED_KEY_NAME } from './migrations';
import { isoOrNull, type SqlDb } from './sql';
import type { ApiKeyInfo, KeyScope } from './types';

export class ApiKeys {
  constructor(private readonly db: SqlDb) {}

  /** New key (newApiKey); returned once, stored as its sha256 hex digest. */
  async create(name: string, scope: KeyScope = 'api'): Promise<{ id: string; key: string }> {
    const cleanName = checkName(name);
    const id = newId();
    const key = newApiKey();
    await this.db.run(`INSERT INTO api_keys (id, name, digest, scope, created_at) VALUES ($1, $2, $3, $4, ${this.db.dialect.now})`, [
      id,
      cleanName,
      sha256Hex(key),
      scope,
    ]);
    return { id, key };
  }

  /**
   * The fleet's generated API key: made once per database (a unique index keeps it one when
   * instances start at once) and returned with `key` to the instance that made it; the others get
   * `key: null` and accept it through the issued keys. Revoked, it is made anew at the next start.
   */
  async fleetKey(): Promise<{ id: string; key: string | null }> {
    const key = newApiKey();
    const made = await this.db.run(
      `INSERT INTO api_keys (id, name, digest, scope, created_at) VALUES ($1, $2, $3, 'api', ${this.db.dialect.now}) ON CONFLICT DO NOTHING`,
      [newId(), GENERATED_KEY_NAME, sha256Hex(key)],
    );
    const [row] = await this.db.query<{ id: string }>('SELECT id FROM api_keys WHERE name = $1 AND revoked_at IS NULL', [GENERATED_KEY_NAME]);
    if (row === undefined) throw new Error('the generated API key was revoked while it was made; start again');
    return { id: row.id, key: made === 1 ? key : null };
  }

  async list(): Promise<ApiKeyInfo[]> {
    const rows = await this.db.query<{ id: string; name: string; scope: KeyScope; created_at: unknown; revoked_at: unknown }>(
      'SELECT id, name, scope, created_at, revoked_at FROM api_keys ORDER BY created_at, id',
    );
    const d = this.db.dialect;
    return rows.map((r) => ({ id: r.id, name: r.name, scope: r.scope, createdAt: d.iso(r.created_at), revokedAt: isoOrNull(d, r.revoked_at) }));
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

  /** sha256 hex digests of the API keys not revoked, for KeyRing.setIssuedDigests. */
  async activeDigests(): Promise<string[]> {
    return (await this.active('api')).map((k) => k.digest);
  }

  /** Ids and sha256 hex digests of the keys of `scope` not revoked. */
  async active(scope: KeyScope): Promise<Array<{ id: string; digest: string }>> {
    return this.db.query<{ id: string; digest: string }>('SELECT id, digest FROM api_keys WHERE revoked_at IS NULL AND scope = $1 ORDER BY created_at, id', [scope]);
  }
}

/** How often a serving process reloads issued keys (new ones and revocations). */
const REFRESH_MS = 30_000;

/**
 * `scope`'s issued keys handed to `apply` now (`first`) and every REFRESH_MS; a failed read is
 * logged and the keys applied last stay.
 */
export function keepIssuedKeys(keys: ApiKeys, scope: KeyScope, apply: (issued: Array<{ id: string; digest: string }>) => void): { first: Promise<void>; stop(): void } {
  const refresh = () => keys.active(scope).then(apply, (error: unknown) => log.warn(`${scope} key refresh failed`, { error: String(error) }));
  const timer = setInterval(refresh, REFRESH_MS);
  timer.unref();
  return { first: refresh(), stop: () => clearInterval(timer) };
}
