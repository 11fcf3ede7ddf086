// Storage of the scan interface: scans (with their logs), scan credentials and CLI-issued API keys,
// behind one interface (ScanStore) with two backends:
//  - SQLite (default, embedded): `<dataDir>/catcomfort.sqlite3`, WAL, synchronous=FULL.
//  - PostgreSQL when a database URL is given: instances share scans and claim work with
//    FOR UPDATE SKIP LOCKED.
// See types.ts for the contract of every method.
import path from 'node:path';
import { PostgresScanStore } from './postgres';
import { SqliteScanStore } from './sqlite';
import type { ScanStore } from './types';

export * from './types';
export { SQLITE_FILE } from './sqlite';
export { sha256Hex } from './common';

export interface StoreOptions {
  /** postgres://... ; when set, PostgreSQL is used and dataDir is ignored. */
  databaseUrl?: string;
  /** Folder of the SQLite file (created if missing). */
  dataDir: string;
  /** Run migrations on open (default true). */
  migrate?: boolean;
}

/** Default data folder: `data/` in the repository root. */
export const defaultDataDir = path.resolve(__dirname, '../../../../data');

/** Store options from CATCOMFORT_DATABASE_URL / CATCOMFORT_DATA_DIR. */
export function storeOptionsFromEnv(env: Record<string, string | undefined> = process.env): StoreOptions {
  const url = env.CATCOMFORT_DATABASE_URL?.trim();
  const dir = env.CATCOMFORT_DATA_DIR?.trim();
  return {
    ...(url ? { databaseUrl: url } : {}),
    dataDir: dir ? path.resolve(dir) : defaultDataDir,
  };
}

/** Opens the backend the options select and (unless `migrate: false`) brings its schema up to date. */
export async function openStore(opts: StoreOptions): Promise<ScanStore> {
  const store: ScanStore =
    opts.databaseUrl !== undefined && opts.databaseUrl !== ''
      ? new PostgresScanStore(opts.databaseUrl)
      : new SqliteScanStore(opts.dataDir);
  if (opts.migrate !== false) {
    try {
      await store.migrate();
    } catch (error) {
      await store.close().catch(() => undefined);
      throw error;
    }
  }
  return store;
}
