// `catcomfort keys ...`: API keys of the v1/v2 interfaces (header api-key), stored as sha256
// digests beside the scans. Running instances reload them every 30 s (src/start.ts).
import { commandList, dispatch, type Subcommand } from './args';
import { createCommand, listCommand, revokeCommand, STORAGE_HELP } from './store';

const COMMANDS: Record<string, Subcommand> = {
  create: { args: '--name NAME', summary: 'Issue a key; prints it once', load: async () => create },
  list: { summary: 'List keys: id, state, creation, name (never the key)', load: async () => list },
  revoke: { args: 'ID', summary: 'Revoke a key by its id', load: async () => revoke },
};

const USAGE = `Usage: catcomfort keys <command>

API keys of the v1/v2 interfaces (header api-key), beside those of CATCOMFORT_API_KEYS.
Running instances pick up new keys and revocations within 30 s (they reload issued keys every 30 s).

${commandList(COMMANDS)}

${STORAGE_HELP}Exit codes: 0 done, 1 failed (e.g. unknown id, storage unreachable), 2 bad usage.
`;

const create = createCommand(USAGE, async (store, name) => {
  const created = await store.apiKeys.create(name);
  return `api key: ${created.key}\nid: ${created.id}\nStore the key now: it is not shown again (only its sha256 is kept). Running instances accept it within 30 s.\n`;
});

const list = listCommand(USAGE, 'no api keys', (store) => store.apiKeys.list(), (k) => [k.id]);

const revoke = revokeCommand(USAGE, 'ID', 'api key', (store, id) => store.apiKeys.revoke(id));

export function keysCommand(argv: string[]): Promise<number> {
  return dispatch(COMMANDS, argv, USAGE);
}
