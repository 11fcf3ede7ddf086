// `catcomfort credentials ...`: credentials of the scan interface (a key id plus a secret; only an
// scrypt hash of the secret is stored). A new credential works at once; a revocation takes effect
// within 30 s (successful checks are cached that long, src/scan/auth.ts).
import { commandList, dispatch, type Subcommand } from './args';
import { createCommand, listCommand, revokeCommand, STORAGE_HELP } from './store';

const COMMANDS: Record<string, Subcommand> = {
  create: { args: '--name NAME', summary: 'Issue a credential; prints the key id and the secret once', load: async () => create },
  list: { summary: 'List credentials: key id, id, state, creation, name (never the secret)', load: async () => list },
  revoke: { args: 'KEY_ID', summary: 'Revoke a credential by key id (sk_...) or credential id', load: async () => revoke },
};

const USAGE = `Usage: catcomfort credentials <command>

Credentials of the scan interface (headers api-key and api-secret). A new credential is accepted
at once; a revoked one is refused within 30 s (successful checks are cached for 30 s).

${commandList(COMMANDS)}

${STORAGE_HELP}Exit codes: 0 done, 1 failed (e.g. unknown id, storage unreachable), 2 bad usage.
`;

const create = createCommand(USAGE, async (store, name) => {
  const created = await store.credentials.create(name);
  return `key id: ${created.keyId}\nsecret: ${created.secret}\ncredential id: ${created.id}\nStore the secret now: it is not shown again (only its hash is kept).\n`;
});

const list = listCommand(USAGE, 'no scan credentials', (store) => store.credentials.list(), (c) => [c.keyId, c.id]);

const revoke = revokeCommand(USAGE, 'KEY_ID', 'scan credential', (store, target) => store.credentials.revoke(target));

export function credentialsCommand(argv: string[]): Promise<number> {
  return dispatch(COMMANDS, argv, USAGE);
}
