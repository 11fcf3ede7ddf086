// Storage of the service: six small stores (the scan queue, scan credentials, CLI-issued API and
// admin keys, the webhook outbox, pack rollouts, the fleet's instances) written once over one SQL-dialect seam (sql.ts), with two drivers:
//  - SQLite (default, embedded): `<dataDir>/catcomfort.sqlite3`, WAL, synchronous=FULL.
//  - PostgreSQL when a database URL is given: instances share scans and claim work with
//    FOR UPDATE SKIP LOCKED.
import { log } from '../log';
import { ApiKeys } from './api-keys';
import { ScanCredentials } from './credentials';
import { PostgresDb } from './postgres-db';
import { ScanQueue } from './scans';
import type { SqlDb } from './sql';
import { SqliteDb } from './sqlite-db';
import { PackRollouts } from './rollouts';
import { FleetInstances } from './fleet';
import { WebhookOutbox } from './webhooks';

export * from './types';
export { SQLITE_FILE } from './sqlite-db';
export { sha256Hex } from './secrets';
export type { SqlDb, SqlValue } from './sql';
export { ApiKeys, FleetInstances, PackRollouts, ScanCredentials, ScanQueue, WebhookOutbox };
export type { Rollout, RolloutChange, RolloutVersion } from './rollouts';
export type { FleetInstance, InstanceBeat, LoadedVersions } from './fleet';
export type { RedeliverResult } from './webhooks';

export interface StoreOptions {
  /** postgres://... ; when set, PostgreSQL is used and dataDir is ignored. */
  databaseUrl?: string | null;
  /** PostgreSQL pool size (CATCOMFORT_DATABASE_POOL); default 10. */
  databasePool?: number;
  /** Folder of the SQLite file (created if missing). */
  dataDir: string;
  /** Run migrations on open (default true). */
  migrate?: boolean;
}

export interface Store {
  /** Which database this is. */
  readonly kind: 'sqlite' | 'postgres';
  readonly scans: ScanQueue;
  readonly credentials: ScanCredentials;
  readonly apiKeys: ApiKeys;
  readonly webhooks: WebhookOutbox;
  readonly rollouts: PackRollouts;
  readonly fleet: FleetInstances;
  /** The database under the stores (migrations; tests reach the tables through it). */
  readonly db: SqlDb;
  /** Scans and their webhook deliveries read in one consistent view (a delivery's state agrees with its scan's logs). */
  readScans<T>(fn: (scans: ScanQueue, webhooks: WebhookOutbox) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** An idle pooled connection lost (one per connection when the server restarts): the pool replaces it, and the next store call says whether the store is down. */
function idlePostgresError(error: Error): void {
  log.debug('postgres idle connection lost', { error: error.message });
}

/** A PostgreSQL URL's host and database, without its password, for messages. */
function whereIs(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.host}${parsed.pathname}`;
  } catch {
    return 'the database';
  }
}

/**
 * Opens the database the options select and (unless `migrate: false`) brings its schema up to
 * date. A PostgreSQL database that cannot be used is reported naming CATCOMFORT_DATABASE_URL.
 */
export async function openStore(opts: StoreOptions): Promise<Store> {
  const url = opts.databaseUrl;
  const db: SqlDb = url ? new PostgresDb(url, { maxConnections: opts.databasePool, onIdleError: idlePostgresError }) : new SqliteDb(opts.dataDir);
  if (opts.migrate !== false) {
    try {
      await db.migrate();
    } catch (error) {
      await db.close().catch(() => undefined);
      if (!url) throw error;
      throw new Error(`CATCOMFORT_DATABASE_URL: cannot use the PostgreSQL database at ${whereIs(url)}: ${(error as Error)?.message ?? String(error)}`);
    }
  }
  return {
    kind: db.dialect.kind,
    scans: new ScanQueue(db),
    credentials: new ScanCredentials(db),
    apiKeys: new ApiKeys(db),
    webhooks: new WebhookOutbox(db),
    rollouts: new PackRollouts(db),
    fleet: new FleetInstances(db),
    db,
    readScans: (fn) => db.snapshot((view) => fn(new ScanQueue(view), new WebhookOutbox(view))),
    close: () => db.close(),
  };
}
