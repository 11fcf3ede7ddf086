// `catcomfort credentials ...`: credentials of the scan interface (a key id plus a secret; only an
// scrypt hash of the secret is stored), each with a webhook signing secret and an optional default
// callback URL. A new credential works at once; a revocation takes effect within 30 s (successful
// checks are cached that long, src/scan/auth.ts).
import { allowPrivateUrlsFrom } from '../config';
import { fetchPolicy, isFetchRefusedError } from '../scan/fetch';
import { checkCallbackUrl } from '../scan/webhooks/callback-url';
import { commandList, dispatch, parse, positionals, requiredName, UsageError, type Subcommand } from './args';
import { listCommand, revokeCommand, STORAGE_HELP, withStore } from './store';

const COMMANDS: Record<string, Subcommand> = {
  create: {
    args: '--name NAME [--webhook-url URL]',
    summary: 'Issue a credential; prints the key id, the secret and the webhook signing secret once',
    load: async () => create,
  },
  list: { summary: 'List credentials: key id, id, state, creation, name, webhook URL (never a secret)', load: async () => list },
  revoke: { args: 'KEY_ID', summary: 'Revoke a credential by key id (sk_...) or credential id', load: async () => revoke },
  'set-webhook-url': { args: 'KEY_ID URL|--clear', summary: "Set or clear the default callback URL of a credential's scans", load: async () => setWebhookUrl },
  'rotate-webhook-secret': {
    args: 'KEY_ID [--overlap-hours N]',
    summary: 'Issue a new webhook signing secret; the old one stays valid N hours (default 24)',
    load: async () => rotate,
  },
};

const USAGE = `Usage: catcomfort credentials <command>

Credentials of the scan interface (headers api-key and api-secret). A new credential is accepted
at once; a revoked one is refused within 30 s (successful checks are cached for 30 s).
Webhooks of a credential's scans are signed with its webhook signing secret (Standard Webhooks,
whsec_...) and go to the scan's callbackUrl, else to the credential's webhook URL. Callback URLs
must be https and reach public addresses only (http and private addresses only with
CATCOMFORT_FETCH_ALLOW_PRIVATE=true).

${commandList(COMMANDS)}

${STORAGE_HELP}Exit codes: 0 done, 1 failed (e.g. unknown id, storage unreachable, URL refused), 2 bad usage.
`;

/** A callback URL the service would accept (the same rules as a scan's callbackUrl). */
async function checkedUrl(url: string): Promise<string> {
  try {
    return await checkCallbackUrl(url, fetchPolicy({ allowPrivate: allowPrivateUrlsFrom() }));
  } catch (error) {
    if (isFetchRefusedError(error)) throw new Error(`webhook URL refused: ${error.message}`);
    throw error;
  }
}

async function create(argv: string[]): Promise<number> {
  const parsed = parse(argv, USAGE, { name: { type: 'string' }, 'webhook-url': { type: 'string' } });
  if (!parsed) return 0;
  const name = requiredName(parsed, USAGE);
  const raw = parsed.values['webhook-url'];
  const webhookUrl = typeof raw === 'string' ? await checkedUrl(raw) : null;
  return withStore(async (store) => {
    const c = await store.credentials.create(name, webhookUrl);
    process.stdout.write(
      `key id: ${c.keyId}\nsecret: ${c.secret}\nwebhook signing secret: ${c.webhookSecret}\ncredential id: ${c.id}\n` +
        (webhookUrl ? `webhook url: ${webhookUrl}\n` : '') +
        'Store both secrets now: they are not shown again (only a hash of the secret is kept; the signing secret is kept to sign with).\n',
    );
    return 0;
  });
}

const list = listCommand(USAGE, 'no scan credentials', (store) => store.credentials.list(), (c) => [c.keyId, c.id], (c) => [c.webhookUrl ? `webhook ${c.webhookUrl}` : 'no webhook url']);

const revoke = revokeCommand(USAGE, 'KEY_ID', 'scan credential', (store, target) => store.credentials.revoke(target));

function unknown(target: string): number {
  process.stderr.write(`no scan credential ${target}\n`);
  return 1;
}

async function setWebhookUrl(argv: string[]): Promise<number> {
  const parsed = parse(argv, USAGE, { clear: { type: 'boolean' } });
  if (!parsed) return 0;
  const clear = parsed.values.clear === true;
  const [target, raw] = positionals(parsed, clear ? 1 : 2, clear ? 'KEY_ID' : 'KEY_ID URL', USAGE) as [string, string | undefined];
  const url = raw === undefined ? null : await checkedUrl(raw);
  return withStore(async (store) => {
    if (!(await store.credentials.setWebhookUrl(target, url))) return unknown(target);
    process.stdout.write(url ? `webhook url of ${target}: ${url}\n` : `webhook url of ${target} cleared\n`);
    return 0;
  });
}

async function rotate(argv: string[]): Promise<number> {
  const parsed = parse(argv, USAGE, { 'overlap-hours': { type: 'string' } });
  if (!parsed) return 0;
  const [target] = positionals(parsed, 1, 'KEY_ID', USAGE) as [string];
  const rawHours = parsed.values['overlap-hours'];
  const hours = rawHours === undefined ? 24 : Number(rawHours);
  if (typeof rawHours === 'boolean' || !Number.isFinite(hours) || hours < 0 || hours > 720) {
    throw new UsageError('--overlap-hours must be a number from 0 to 720', USAGE);
  }
  return withStore(async (store) => {
    const rotated = await store.credentials.rotateWebhookSecret(target, Math.round(hours * 3_600_000));
    if (rotated === null) return unknown(target);
    process.stdout.write(
      `webhook signing secret: ${rotated.webhookSecret}\n` +
        (rotated.previousValidUntil
          ? `The previous secret stays valid until ${rotated.previousValidUntil}: deliveries carry both signatures until then.\n`
          : 'This credential had no signing secret before.\n') +
        'Store the secret now: it is not shown again.\n',
    );
    return 0;
  });
}

export function credentialsCommand(argv: string[]): Promise<number> {
  return dispatch(COMMANDS, argv, USAGE);
}
