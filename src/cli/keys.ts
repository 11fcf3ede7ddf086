// `catcomfort keys ...`: API keys of the v1/v2 interfaces (header api-key) and, with --admin, keys of
// the admin listener (CATCOMFORT_ADMIN_PORT), stored as sha256 digests beside the scans. Running
// instances reload them every 30 s (src/start.ts).
import { commandList, dispatch, parse, requiredName, type Subcommand } from './args';
import { listCommand, revokeCommand, STORAGE_HELP, withStore } from './store';

const COMMANDS: Record<string, Subcommand> = {
  create: { args: '--name NAME [--admin]', summary: 'Issue a key (--admin: for the admin listener only); prints it once', load: async () => create },
  list: { summary: 'List keys: id, scope, state, creation, name (never the key)', load: async () => list },
  revoke: { args: 'ID', summary: 'Revoke a key by its id', load: async () => revoke },
};

const USAGE = `Usage: catcomfort keys <command>

API keys of the v1/v2 interfaces (header api-key), beside those of CATCOMFORT_API_KEYS, and with
--admin keys of the admin listener (Authorization: Bearer), beside those of CATCOMFORT_ADMIN_KEYS.
An API key never opens the admin listener, nor an admin key the API.
Running instances pick up new keys and revocations within 30 s (they reload issued keys every 30 s).

${commandList(COMMANDS)}

${STORAGE_HELP}Exit codes: 0 done, 1 failed (e.g. unknown id, storage unreachable), 2 bad usage.
`;

async function create(argv: string[]): Promise<number> {
  const parsed = parse(argv, USAGE, { name: { type: 'string' }, admin: { type: 'boolean' } });
  if (!parsed) return 0;
  const name = requiredName(parsed, USAGE);
  const scope = parsed.values.admin === true ? 'admin' : 'api';
  return withStore(async (store) => {
    const created = await store.apiKeys.create(name, scope);
    const label = scope === 'admin' ? 'admin key' : 'api key';
    process.stdout.write(`${label}: ${created.key}\nid: ${created.id}\nStore the key now: it is not shown again (only its sha256 is kept). Running instances accept it within 30 s.\n`);
    return 0;
  });
}

const list = listCommand(USAGE, 'no api keys', (store) => store.apiKeys.list(), (k) => [k.id, k.scope]);

const revoke = revokeCommand(USAGE, 'ID', 'api key', (store, id) => store.apiKeys.revoke(id));

export function keysCommand(argv: string[]): Promise<number> {
  return dispatch(COMMANDS, argv, USAGE);
}
