// Opens the storage the service uses (CATCOMFORT_DATABASE_URL, else SQLite under
// CATCOMFORT_DATA_DIR) for one CLI command, and closes it afterwards.
import { storeLocationFrom } from '../config';
import { openStore, type Store } from '../store';
import { parse, positionals } from './args';

export const STORAGE_HELP = `Storage: CATCOMFORT_DATABASE_URL (PostgreSQL) when set, else the SQLite file in
CATCOMFORT_DATA_DIR (default: data/ in the repository root): the service's own.
`;

export async function withStore(work: (store: Store) => Promise<number>): Promise<number> {
  const store = await openStore(storeLocationFrom(process.env));
  try {
    return await work(store);
  } finally {
    await store.close().catch(() => undefined);
  }
}


const state = (revokedAt: string | null): string => (revokedAt === null ? 'active' : `revoked ${revokedAt}`);

/** A `list` subcommand: one tab-separated line per row (its state after `lead`, `tail` after its name), or `empty`. */
export function listCommand<T extends { revokedAt: string | null; createdAt: string; name: string }>(
  usage: string,
  empty: string,
  rows: (store: Store) => Promise<T[]>,
  lead: (row: T) => string[],
  tail: (row: T) => string[] = () => [],
) {
  return async (argv: string[]): Promise<number> => {
    const parsed = parse(argv, usage);
    if (!parsed) return 0;
    positionals(parsed, 0, '', usage);
    return withStore(async (store) => {
      const all = await rows(store);
      if (all.length === 0) process.stdout.write(`${empty}\n`);
      for (const r of all) process.stdout.write([...lead(r), state(r.revokedAt), `created ${r.createdAt}`, r.name, ...tail(r)].join('\t') + '\n');
      return 0;
    });
  };
}

/** A `revoke` subcommand taking one positional `argName`; `what` names the thing in messages. */
export function revokeCommand(usage: string, argName: string, what: string, revoke: (store: Store, target: string) => Promise<boolean>) {
  return async (argv: string[]): Promise<number> => {
    const parsed = parse(argv, usage);
    if (!parsed) return 0;
    const [target] = positionals(parsed, 1, argName, usage) as [string];
    return withStore(async (store) => {
      if (!(await revoke(store, target))) {
        process.stderr.write(`no ${what} ${target}\n`);
        return 1;
      }
      process.stdout.write(`revoked ${what} ${target}; running instances refuse it within 30 s\n`);
      return 0;
    });
  };
}
