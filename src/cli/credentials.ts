// `catcomfort credentials ...`: credentials of the scan interface (a key id plus a secret; only an
// scrypt hash of the secret is stored). A new credential works at once; a revocation takes effect
// within 30 s (successful checks are cached that long, src/scan/auth.ts).
import { commandList, dispatch, parse, positionals, requiredName, type Subcommand } from './args';
import { STORAGE_HELP, withStore } from './store';

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

async function create(argv: string[]): Promise<number> {
  const parsed = parse(argv, USAGE, { name: { type: 'string' } });
  if (!parsed) return 0;
  const name = requiredName(parsed, USAGE);
  return withStore(async (store) => {
    const created = await store.credentials.create(name);
    process.stdout.write(`key id: ${created.keyId}\nsecret: ${created.secret}\ncredential id: ${created.id}\n`);
    process.stdout.write('Store the secret now: it is not shown again (only its hash is kept).\n');
    return 0;
  });
}

async function list(argv: string[]): Promise<number> {
  const parsed = parse(argv, USAGE);
  if (!parsed) return 0;
  positionals(parsed, 0, '', USAGE);
  return withStore(async (store) => {
    const credentials = await store.credentials.list();
    if (credentials.length === 0) process.stdout.write('no scan credentials\n');
    for (const c of credentials) {
      process.stdout.write([c.keyId, c.id, c.revokedAt === null ? 'active' : `revoked ${c.revokedAt}`, `created ${c.createdAt}`, c.name].join('\t') + '\n');
    }
    return 0;
  });
}

async function revoke(argv: string[]): Promise<number> {
  const parsed = parse(argv, USAGE);
  if (!parsed) return 0;
  const [target] = positionals(parsed, 1, 'KEY_ID', USAGE) as [string];
  return withStore(async (store) => {
    if (!(await store.credentials.revoke(target))) {
      process.stderr.write(`no scan credential ${target}\n`);
      return 1;
    }
    process.stdout.write(`revoked scan credential ${target}; running instances refuse it within 30 s\n`);
    return 0;
  });
}

export function credentialsCommand(argv: string[]): Promise<number> {
  return dispatch(COMMANDS, argv, USAGE);
}
