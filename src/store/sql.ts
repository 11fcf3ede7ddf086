// The SQL-dialect seam of the store: the stores (scans.ts, credentials.ts, api-keys.ts) hold the
// logic once and speak to either database through this interface; the drivers (sqlite-db.ts,
// postgres-db.ts) differ only in SQL fragments, value conversions and how they lock.
//
// Statements use PostgreSQL's numbered placeholders ($1, $2, ...); the SQLite driver rewrites them.

export type SqlValue = string | number | Buffer | null;

export interface Dialect {
  readonly kind: 'sqlite' | 'postgres';
  /** The database clock as a time value (SQLite: epoch ms; PostgreSQL: the statement's clock). */
  readonly now: string;
  /** `time` plus the milliseconds of the numeric expression `ms`. */
  plusMs(time: string, ms: string): string;
  /** Appended to a SELECT that picks queue rows for update (PostgreSQL: FOR UPDATE SKIP LOCKED). */
  readonly lockSkipLocked: string;
  /** A placeholder compared with a time column / a uuid column (PostgreSQL needs the cast). */
  timeParam(placeholder: string): string;
  uuidParam(placeholder: string): string;
  /** Parameter value for a time column, from ISO 8601. */
  timeValue(iso: string): SqlValue;
  /** ISO 8601 (ms) of a time column as the driver returns it. */
  iso(value: unknown): string;
  /** A JSON column as the driver returns it, parsed. */
  json<T>(value: unknown): T;
}

export interface SqlDb {
  readonly dialect: Dialect;
  /** Rows of one statement. */
  query<R>(sql: string, params?: readonly SqlValue[]): Promise<R[]>;
  /** Number of rows one statement changed. */
  run(sql: string, params?: readonly SqlValue[]): Promise<number>;
  /**
   * Runs `fn` in one transaction that writes (SQLite: BEGIN IMMEDIATE; PostgreSQL: one pooled
   * connection); commits when it resolves, rolls back when it throws.
   */
  transaction<T>(fn: (tx: SqlDb) => Promise<T>): Promise<T>;
  /**
   * Runs `fn`'s reads against one consistent view of the database, so that rows read by several
   * statements agree with each other (a read-only transaction; `run` is refused inside it).
   */
  snapshot<T>(fn: (view: SqlDb) => Promise<T>): Promise<T>;
  /** Applies the migrations not yet recorded in schema_migrations, once across instances. */
  migrate(): Promise<void>;
  close(): Promise<void>;
}

/** The SqlDb a transaction's body sees: statements on the transaction's connection, nothing else (a snapshot's has no `run`). */
export function transactionView(dialect: Dialect, query: SqlDb['query'], run: SqlDb['run'] | null): SqlDb {
  const refuse = (what: string) => () => Promise.reject(new Error(`${what} inside a transaction`));
  const nested = refuse('a nested transaction');
  return { dialect, query, run: run ?? refuse('a write in a snapshot'), transaction: nested, snapshot: nested, migrate: refuse('migrate'), close: refuse('close') };
}

export const isoOrNull = (dialect: Dialect, value: unknown): string | null => (value === null ? null : dialect.iso(value));

/** `$1, $2, ...` placeholders for `count` values starting at `first`. */
export function placeholders(first: number, count: number): string {
  return Array.from({ length: count }, (_, i) => `$${first + i}`).join(', ');
}
