// Opens the storage the service uses (CATCOMFORT_DATABASE_URL, else SQLite under
// CATCOMFORT_DATA_DIR) for one CLI command, and closes it afterwards.
import { openStore, storeOptionsFromEnv, type Store } from '../scan/store';

export const STORAGE_HELP = `Storage: CATCOMFORT_DATABASE_URL (PostgreSQL) when set, else the SQLite file in
CATCOMFORT_DATA_DIR (default: data/ in the repository root): the service's own.
`;

export async function withStore(work: (store: Store) => Promise<number>): Promise<number> {
  const store = await openStore(storeOptionsFromEnv(process.env));
  try {
    return await work(store);
  } finally {
    await store.close().catch(() => undefined);
  }
}

