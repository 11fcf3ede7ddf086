// PostgreSQL driver of the SQL seam: several service instances share one database. Times come
// from the database clock (one clock for every instance's leases); queue rows are picked with
// FOR UPDATE SKIP LOCKED, so two claimers never take the same scan and never wait on each other.
// Migrations run under an advisory lock, so instances starting at once apply them exactly once.
// Every wait is bounded (STORE_TIMEOUTS); a database that cannot be reached or answer becomes a
// StoreUnavailableError, and the pool replaces broken connections, so it recovers by itself.
import pg from 'pg';
import { postgresMigrations } from './migrations';
import { transactionView, type Dialect, type SqlDb, type SqlValue } from './sql';
import { StoreUnavailableError } from './types';

/** The longest a store call waits, in ms: for a connection, and for one statement (server, then client side). */
export const STORE_TIMEOUTS = { connectMs: 3000, statementMs: 5000, queryMs: 6000 } as const;

/** SQLSTATE classes of a database that is down or out of resources (08 connection, 53 resources, 57P operator, 58 system). */
const UNAVAILABLE_STATE = /^(08|53|57P|58)|^57014$/;
const UNAVAILABLE_CODE = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
const UNAVAILABLE_MESSAGE = /Connection terminated|timeout exceeded when trying to connect|not queryable|Query read timeout|Connection ended/;

/** The error as the store reports it: StoreUnavailableError for a database that is down or stalled. */
function classify(error: unknown): unknown {
  const e = error as { code?: unknown; message?: unknown };
  const code = typeof e?.code === 'string' ? e.code : '';
  const message = typeof e?.message === 'string' ? e.message : '';
  if (UNAVAILABLE_CODE.has(code) || UNAVAILABLE_STATE.test(code) || UNAVAILABLE_MESSAGE.test(message)) return new StoreUnavailableError(error);
  return error;
}

async function classified<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw classify(error);
  }
}

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
  /** Pool size (CATCOMFORT_DATABASE_POOL); default 10. */
  maxConnections?: number;
  /** Called when an idle pooled connection fails (the pool replaces it). */
  onIdleError?: (error: Error) => void;
}

export class PostgresDb implements SqlDb {
  readonly dialect = dialect;
  private readonly pool: pg.Pool;
  private closed = false;

  constructor(databaseUrl: string, options: PostgresOptions = {}) {
    this.pool = new pg.Pool({
      connectionString: databaseUrl,
      max: options.maxConnections ?? 10,
      connectionTimeoutMillis: STORE_TIMEOUTS.connectMs,
      statement_timeout: STORE_TIMEOUTS.statementMs,
      query_timeout: STORE_TIMEOUTS.queryMs,
    });
    // An idle client losing its connection must not crash the process.
    this.pool.on('error', (error) => options.onIdleError?.(error));
  }

  query<R>(sql: string, params: readonly SqlValue[] = []): Promise<R[]> {
    return classified(() => rows<R>(this.pool, sql, params));
  }

  run(sql: string, params: readonly SqlValue[] = []): Promise<number> {
    return classified(() => changed(this.pool, sql, params));
  }

  transaction<T>(fn: (tx: SqlDb) => Promise<T>): Promise<T> {
    return classified(() => this.onOneConnection('BEGIN', true, fn));
  }

  snapshot<T>(fn: (view: SqlDb) => Promise<T>): Promise<T> {
    return classified(() => this.onOneConnection('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', false, fn));
  }

  /** `fn` in one transaction on one pooled connection, opened by `begin`. */
  private async onOneConnection<T>(begin: string, writes: boolean, fn: (tx: SqlDb) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    // A held connection that the server ends (restart, admin shutdown) emits 'error' on the client
    // itself: without a listener that would take the process down. The statement in progress fails
    // on its own; the connection is dropped on release.
    const onError = (error: Error) => (broken = error);
    client.on('error', onError);
    const inner = transactionView(
      dialect,
      <R>(sql: string, params: readonly SqlValue[] = []) => rows<R>(client, sql, params),
      writes ? (sql, params = []) => changed(client, sql, params) : null,
    );
    try {
      await client.query(begin);
      const value = await fn(inner);
      await client.query('COMMIT');
      return value;
    } catch (error) {
      await client.query('ROLLBACK').catch((rollback: Error) => (broken = rollback));
      throw error;
    } finally {
      // A connection whose ROLLBACK failed, or that the server ended, is dropped, not handed on.
      client.off('error', onError);
      client.release(broken);
    }
  }

  async migrate(): Promise<void> {
    const client = await this.pool.connect();
    const onError = () => undefined; // the statement in progress fails with the same error
    client.on('error', onError);
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
      client.off('error', onError);
      client.release();
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }
}
