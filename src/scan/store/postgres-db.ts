// PostgreSQL driver of the SQL seam: several service instances share one database. Times come
// from the database clock (one clock for every instance's leases); queue rows are picked with
// FOR UPDATE SKIP LOCKED, so two claimers never take the same scan and never wait on each other.
// Migrations run under an advisory lock, so instances starting at once apply them exactly once.
import pg from 'pg';
import { postgresMigrations } from './migrations';
import { transactionView, type Dialect, type SqlDb, type SqlValue } from './sql';

/** Advisory lock key of the migration step (the ASCII bytes of "catcomfo" as a bigint). */
const MIGRATION_LOCK = '7161132852915824239';

const dialect: Dialect = {
  kind: 'postgres',
  now: 'clock_timestamp()',
  plusMs: (time, ms) => `(${time} + make_interval(secs => (${ms})::double precision / 1000))`,
  lockSkipLocked: ' FOR UPDATE SKIP LOCKED',
  timeParam: (p) => `${p}::timestamptz`,
  uuidParam: (p) => `${p}::uuid`,
  timeValue: (iso) => iso,
  iso: (value) => (value as Date).toISOString(),
  json: <T>(value: unknown) => value as T,
};

type Queryable = pg.Pool | pg.PoolClient;

async function rows<R>(db: Queryable, sql: string, params: readonly SqlValue[]): Promise<R[]> {
  return (await db.query(sql, params as unknown[])).rows as R[];
}

async function changed(db: Queryable, sql: string, params: readonly SqlValue[]): Promise<number> {
  return (await db.query(sql, params as unknown[])).rowCount ?? 0;
}

export interface PostgresOptions {
  /** Pool size; default 10. */
  maxConnections?: number;
  /** Called when an idle pooled connection fails (the pool replaces it). */
  onIdleError?: (error: Error) => void;
}

export class PostgresDb implements SqlDb {
  readonly dialect = dialect;
  private readonly pool: pg.Pool;
  private closed = false;

  constructor(databaseUrl: string, options: PostgresOptions = {}) {
    this.pool = new pg.Pool({ connectionString: databaseUrl, max: options.maxConnections ?? 10 });
    // An idle client losing its connection must not crash the process.
    this.pool.on('error', (error) => options.onIdleError?.(error));
  }

  query<R>(sql: string, params: readonly SqlValue[] = []): Promise<R[]> {
    return rows<R>(this.pool, sql, params);
  }

  run(sql: string, params: readonly SqlValue[] = []): Promise<number> {
    return changed(this.pool, sql, params);
  }

  async transaction<T>(fn: (tx: SqlDb) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    const inner = transactionView(
      dialect,
      <R>(sql: string, params: readonly SqlValue[] = []) => rows<R>(client, sql, params),
      (sql, params = []) => changed(client, sql, params),
    );
    try {
      await client.query('BEGIN');
      const value = await fn(inner);
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
        const applied = new Set((await rows<{ version: number }>(client, 'SELECT version FROM schema_migrations', [])).map((r) => r.version));
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

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}
