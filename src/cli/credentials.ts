// Operator CLI: issues, lists and revokes scan credentials (key id + secret) and v1/v2 API keys.
// Uses the same storage as the service: CATCOMFORT_DATABASE_URL (PostgreSQL) when set, else the
// SQLite file under CATCOMFORT_DATA_DIR (default data/). Exit codes: 0 done, 1 failed, 2 bad usage.
import { openStore, storeOptionsFromEnv, type Store } from '../scan/store';

const USAGE = `Usage: npm run credentials -- <command> [options]

Scan interface credentials (an API key id plus a secret):
  create-scan-credential --name NAME   Issue a credential; prints the key id and the secret once
  list-scan-credentials                List credentials (the secret is never shown again)
  revoke-scan-credential KEY_ID        Revoke a credential (by key id or credential id)

API keys of the v1/v2 interfaces (header api-key):
  create-api-key --name NAME           Issue a key; prints it once
  list-api-keys                        List keys (the key itself is never shown again)
  revoke-api-key ID                    Revoke a key by its id

Storage: CATCOMFORT_DATABASE_URL (PostgreSQL) when set, else the SQLite file in
CATCOMFORT_DATA_DIR (default: data/ in the repository root).
Exit codes: 0 done, 1 failed (e.g. unknown id), 2 bad usage.
`;

class UsageError extends Error {}

interface Parsed {
  command: string;
  positional: string[];
  name: string | undefined;
}

function parse(argv: string[]): Parsed {
  const [command, ...rest] = argv;
  if (command === undefined) throw new UsageError('no command given');
  const positional: string[] = [];
  let name: string | undefined;
  for (let i = 0; i < rest.length; i += 1) {
    const arg = rest[i]!;
    if (arg === '--name') {
      const value = rest[i + 1];
      if (value === undefined) throw new UsageError('--name needs a value');
      name = value;
      i += 1;
    } else if (arg.startsWith('--name=')) {
      name = arg.slice('--name='.length);
    } else if (arg.startsWith('-')) {
      throw new UsageError(`unknown option ${arg}`);
    } else {
      positional.push(arg);
    }
  }
  return { command, positional, name };
}

function needName(p: Parsed): string {
  if (p.positional.length > 0) throw new UsageError(`${p.command} takes no positional argument`);
  const name = p.name?.trim();
  if (name === undefined || name === '') throw new UsageError(`${p.command} needs --name NAME`);
  if (name.length > 200) throw new UsageError('--name must be at most 200 characters');
  return name;
}

function needOne(p: Parsed, what: string): string {
  if (p.name !== undefined) throw new UsageError(`${p.command} takes no --name`);
  if (p.positional.length !== 1) throw new UsageError(`${p.command} needs exactly one ${what}`);
  return p.positional[0]!;
}

function needNone(p: Parsed): void {
  if (p.name !== undefined || p.positional.length > 0) throw new UsageError(`${p.command} takes no arguments`);
}

type Out = (line: string) => void;

const commands: Record<string, (store: Store, p: Parsed, out: Out) => Promise<number>> = {
  async 'create-scan-credential'(store, p, out) {
    const created = await store.credentials.create(needName(p));
    out(`key id: ${created.keyId}`);
    out(`secret: ${created.secret}`);
    out(`credential id: ${created.id}`);
    out('Store the secret now: it is not shown again (only its hash is kept).');
    return 0;
  },
  async 'list-scan-credentials'(store, p, out) {
    needNone(p);
    const list = await store.credentials.list();
    if (list.length === 0) out('no scan credentials');
    for (const c of list) {
      out([c.keyId, c.id, c.revokedAt === null ? 'active' : `revoked ${c.revokedAt}`, `created ${c.createdAt}`, c.name].join('\t'));
    }
    return 0;
  },
  async 'revoke-scan-credential'(store, p, out) {
    const target = needOne(p, 'KEY_ID');
    if (!(await store.credentials.revoke(target))) {
      out(`no scan credential ${target}`);
      return 1;
    }
    out(`revoked scan credential ${target}`);
    return 0;
  },
  async 'create-api-key'(store, p, out) {
    const created = await store.apiKeys.create(needName(p));
    out(`api key: ${created.key}`);
    out(`id: ${created.id}`);
    out('Store the key now: it is not shown again (only its sha256 is kept). Running instances load new keys at start.');
    return 0;
  },
  async 'list-api-keys'(store, p, out) {
    needNone(p);
    const list = await store.apiKeys.list();
    if (list.length === 0) out('no api keys');
    for (const k of list) {
      out([k.id, k.revokedAt === null ? 'active' : `revoked ${k.revokedAt}`, `created ${k.createdAt}`, k.name].join('\t'));
    }
    return 0;
  },
  async 'revoke-api-key'(store, p, out) {
    const target = needOne(p, 'ID');
    if (!(await store.apiKeys.revoke(target))) {
      out(`no api key ${target}`);
      return 1;
    }
    out(`revoked api key ${target}`);
    return 0;
  },
};

export async function runCli(argv: string[], env: Record<string, string | undefined> = process.env): Promise<number> {
  if (argv.length === 1 && ['help', '--help', '-h'].includes(argv[0]!)) {
    process.stdout.write(USAGE);
    return 0;
  }
  let parsed: Parsed;
  let handler: (typeof commands)[string] | undefined;
  try {
    parsed = parse(argv);
    handler = commands[parsed.command];
    if (handler === undefined) throw new UsageError(`unknown command ${parsed.command}`);
    // Validate arguments before touching storage.
    if (parsed.command.startsWith('create-')) needName(parsed);
    else if (parsed.command.startsWith('revoke-')) needOne(parsed, 'id');
    else needNone(parsed);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`error: ${error.message}\n\n${USAGE}`);
      return 2;
    }
    throw error;
  }
  let store: Store | undefined;
  try {
    store = await openStore(storeOptionsFromEnv(env));
    return await handler(store, parsed, (line) => process.stdout.write(line + '\n'));
  } catch (error) {
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    return 1;
  } finally {
    await store?.close().catch(() => undefined);
  }
}

if (require.main === module) {
  runCli(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`error: ${error instanceof Error ? error.stack ?? error.message : String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
