// SQLite driver of the SQL seam (embedded default): one file under the data folder, WAL journal,
// synchronous=FULL so a commit that returned survives power loss. better-sqlite3 is synchronous;
// writers take the lock up front (BEGIN IMMEDIATE), so several processes may share the file
// (busy_timeout waits for the lock). Within this process, a transaction holds the file until it
// ends: statements on any connection to the same file wait for it in JavaScript, so they neither
// land inside it nor block the thread on a lock that only this thread could release.
// A full disk, an I/O error or a lock held past busy_timeout becomes a StoreUnavailableError. The
// write-ahead log is kept small (WAL_PAGES), and after a write failed for lack of space the next
// write first checkpoints the log and truncates it (PRAGMA wal_checkpoint(TRUNCATE)), so the store
// recovers by itself once space is back: a log grown to most of the volume could not be checkpointed
// (the database file has no room to take its pages) and grew back into whatever space was freed.
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { sqliteMigrations } from './migrations';
import { transactionView, type Dialect, type SqlDb, type SqlValue } from './sql';
import { StoreUnavailableError } from './types';

/** SQLite result codes of a store that cannot write or be read now (extended codes start with these). */
const UNAVAILABLE = /^SQLITE_(FULL|IOERR|BUSY|LOCKED|CANTOPEN|READONLY|NOMEM|PROTOCOL)/;
const OUT_OF_SPACE = /^SQLITE_(FULL|IOERR)/;
/** Pages of write-ahead log between checkpoints (SQLite's default is 1000, 4 MB). */
const WAL_PAGES = 100;

export const SQLITE_FILE = 'catcomfort.sqlite3';

const dialect: Dialect = {
  kind: 'sqlite',
  // Epoch milliseconds; julianday('now') is fixed for the duration of one statement.
  now: "CAST(ROUND((julianday('now') - 2440587.5) * 86400000) AS INTEGER)",
  plusMs: (time, ms) => `(${time} + ${ms})`,
  lockSkipLocked: '',
  timeParam: (p) => p,
  uuidParam: (p) => p,
  timeValue: (iso) => Date.parse(iso),
  iso: (value) => new Date(value as number).toISOString(),
  json: <T>(value: unknown) => JSON.parse(value as string) as T,
};

/** `$n` placeholders to SQLite's positional `?`, with the values in matching order. */
function positional(sql: string, params: readonly SqlValue[]): { sql: string; values: SqlValue[] } {
  const values: SqlValue[] = [];
  const text = sql.replace(/\$(\d+)/g, (_, n: string) => {
    const index = Number(n) - 1;
    if (index < 0 || index >= params.length) throw new RangeError(`placeholder $${n} has no value`);
    values.push(params[index]!);
    return '?';
  });
  return { sql: text, values };
}

/** Per database file of this process: settles when the running transaction (if any) has ended. */
interface FileGate {
  busy: Promise<void>;
}
const gates = new Map<string, FileGate>();

const MAX_PREPARED = 256;
/** SQLite's page cache for this connection, KiB. */
export const CACHE_KIB = 2048;

export class SqliteDb implements SqlDb {
  readonly dialect = dialect;
  private readonly db: Database.Database;
  private readonly gate: FileGate;
  /** A write failed for lack of space: checkpoint and truncate the WAL before the next one. */
  private walToTruncate = false;

  constructor(dataDir: string) {
    fs.mkdirSync(dataDir, { recursive: true });
    const file = path.join(fs.realpathSync(dataDir), SQLITE_FILE);
    let gate = gates.get(file);
    if (gate === undefined) gates.set(file, (gate = { busy: Promise.resolve() }));
    this.gate = gate;
    this.db = new Database(file);
    this.db.pragma('busy_timeout = 10000');
    this.db.pragma('journal_mode = WAL');
    // A small write-ahead log: checkpointed every WAL_PAGES pages and cut back to that size after,
    // so that it never holds most of a small volume (which it then cannot be checkpointed out of).
    this.db.pragma(`wal_autocheckpoint = ${WAL_PAGES}`);
    this.db.pragma(`journal_size_limit = ${WAL_PAGES * 4096}`);
    this.db.pragma('synchronous = FULL');
    this.db.pragma('foreign_keys = ON');
    // Pages cached in this process: the OS caches the file too, and a cache as large as better-sqlite3's
    // default (16 MiB) grew with the store for hours (docs/performance-log.md "Steps of 4 MiB, and SQLite's cache").
    this.db.pragma(`cache_size = -${CACHE_KIB}`);
  }

  /** Prepared statements by SQL text (the store's queries are a fixed set; the bound keeps a generated one from growing it without end). */
  private readonly prepared = new Map<string, Database.Statement>();

  private statement(sql: string, params: readonly SqlValue[]) {
    const { sql: text, values } = positional(sql, params);
    let stmt = this.prepared.get(text);
    if (stmt === undefined) {
      if (this.prepared.size >= MAX_PREPARED) this.prepared.clear();
      stmt = this.db.prepare(text);
      this.prepared.set(text, stmt);
    }
    return { stmt, values };
  }

  private queryNow<R>(sql: string, params: readonly SqlValue[]): R[] {
    const { stmt, values } = this.statement(sql, params);
    return (stmt.reader ? stmt.all(...values) : (stmt.run(...values), [])) as R[];
  }

  private runNow(sql: string, params: readonly SqlValue[]): number {
    const { stmt, values } = this.statement(sql, params);
    return stmt.run(...values).changes;
  }

  /** The error as the store reports it; a write that failed for lack of space marks the WAL for truncation. */
  private classify(error: unknown): unknown {
    const code = (error as { code?: unknown })?.code;
    if (typeof code !== 'string' || !UNAVAILABLE.test(code)) return error;
    if (OUT_OF_SPACE.test(code)) this.walToTruncate = true;
    return new StoreUnavailableError(error);
  }

  /** After a write failed for lack of space: the WAL checkpointed into the database and truncated (throws while still full). */
  private truncateWal(): void {
    if (!this.walToTruncate) return;
    const [result] = this.db.pragma('wal_checkpoint(TRUNCATE)') as Array<{ busy: number }>;
    if (result?.busy === 0) this.walToTruncate = false;
  }

  /** Runs `fn` as soon as no transaction holds the connection, in the same tick as the check. */
  private async whenIdle<T>(fn: () => T): Promise<T> {
    for (;;) {
      const current = this.gate.busy;
      await current;
      if (this.gate.busy === current) {
        try {
          return fn();
        } catch (error) {
          throw this.classify(error);
        }
      }
    }
  }

  query<R>(sql: string, params: readonly SqlValue[] = []): Promise<R[]> {
    return this.whenIdle(() => this.queryNow<R>(sql, params));
  }

  run(sql: string, params: readonly SqlValue[] = []): Promise<number> {
    return this.whenIdle(() => {
      this.truncateWal();
      return this.runNow(sql, params);
    });
  }

  transaction<T>(fn: (tx: SqlDb) => Promise<T>): Promise<T> {
    return this.holding(true, fn);
  }

  snapshot<T>(fn: (view: SqlDb) => Promise<T>): Promise<T> {
    return this.holding(false, fn);
  }

  /** `fn` in one transaction holding this process's connection: BEGIN IMMEDIATE to write, a deferred BEGIN (a WAL snapshot) to read. */
  private async holding<T>(writes: boolean, fn: (tx: SqlDb) => Promise<T>): Promise<T> {
    const release = await this.whenIdle(() => {
      let done!: () => void;
      this.gate.busy = new Promise<void>((resolve) => (done = resolve));
      return done;
    });
    const inner = transactionView(
      dialect,
      async <R>(sql: string, params: readonly SqlValue[] = []) => this.queryNow<R>(sql, params),
      writes ? async (sql, params = []) => this.runNow(sql, params) : null,
    );
    try {
      if (writes) this.truncateWal();
      this.db.exec(writes ? 'BEGIN IMMEDIATE' : 'BEGIN');
      try {
        const value = await fn(inner);
        this.db.exec('COMMIT');
        return value;
      } catch (error) {
        if (this.db.inTransaction) this.db.exec('ROLLBACK');
        throw error;
      }
    } catch (error) {
      throw this.classify(error);
    } finally {
      release();
    }
  }

  async migrate(): Promise<void> {
    await this.transaction(async (tx) => {
      await tx.run(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`);
      const applied = new Set((await tx.query<{ version: number }>('SELECT version FROM schema_migrations')).map((r) => r.version));
      for (const migration of sqliteMigrations) {
        if (applied.has(migration.version)) continue;
        this.db.exec(migration.sql);
        await tx.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [
          migration.version,
          migration.name,
          new Date().toISOString(),
        ]);
      }
    });
  }

  close(): Promise<void> {
    return this.whenIdle(() => {
      if (this.db.open) this.db.close();
    });
  }
}
