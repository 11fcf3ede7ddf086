// `catcomfort webhooks ...`: send a scan's webhook again, and a local receiver that verifies and
// prints events (to see them without writing a receiver).
import http from 'node:http';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { commandList, dispatch, parse, positionals, UsageError, type Subcommand } from './args';
import { STORAGE_HELP, withStore } from './store';

const COMMANDS: Record<string, Subcommand> = {
  redeliver: { args: 'SCAN_ID', summary: "Send a finished scan's webhook again (same webhook-id, fresh retry schedule)", load: async () => redeliver },
  listen: {
    args: '--secret whsec_... [--port N] [--status CODE]',
    summary: 'Receive webhooks on 127.0.0.1: verify each signature, print one JSON line per event',
    load: async () => listen,
  },
};

const USAGE = `Usage: catcomfort webhooks <command>

Webhooks of scans (docs/scan.md "Webhooks"). A redelivery is sent by a running instance within a second.

${commandList(COMMANDS)}

listen answers every verified event with --status (default 204) and a bad signature with 401; point
a credential's webhook URL at it (http://127.0.0.1:PORT/ needs CATCOMFORT_FETCH_ALLOW_PRIVATE=true).

${STORAGE_HELP}Exit codes: 0 done, 1 failed (e.g. unknown or unfinished scan, storage unreachable), 2 bad usage.
`;

const REDELIVERED: Record<string, [number, string]> = {
  requeued: [0, 'webhook of scan %s is due again; a running instance sends it'],
  created: [0, 'scan %s now has a webhook (its credential has a webhook URL); a running instance sends it'],
  not_found: [1, 'no scan %s'],
  not_finished: [1, 'scan %s is not finished yet: its webhook goes out when it is'],
  no_url: [1, 'scan %s has no callback URL, nor has its credential a webhook URL (catcomfort credentials set-webhook-url)'],
};

async function redeliver(argv: string[]): Promise<number> {
  const parsed = parse(argv, USAGE);
  if (!parsed) return 0;
  const [scanId] = positionals(parsed, 1, 'SCAN_ID', USAGE) as [string];
  return withStore(async (store) => {
    const [code, text] = REDELIVERED[await store.webhooks.redeliver(scanId)]!;
    (code === 0 ? process.stdout : process.stderr).write(`${text.replace('%s', scanId)}\n`);
    return code;
  });
}

function integerOption(value: string | boolean | undefined, name: string, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (typeof value !== 'string' || !Number.isInteger(n) || n < min || n > max) throw new UsageError(`${name} must be an integer from ${min} to ${max}`, USAGE);
  return n;
}

async function listen(argv: string[]): Promise<number> {
  const parsed = parse(argv, USAGE, { secret: { type: 'string' }, port: { type: 'string' }, status: { type: 'string' } });
  if (!parsed) return 0;
  positionals(parsed, 0, '', USAGE);
  const secret = parsed.values.secret;
  if (typeof secret !== 'string' || !secret.startsWith('whsec_')) throw new UsageError('--secret whsec_... is required (the credential\'s webhook signing secret)', USAGE);
  let verifier: Webhook;
  try {
    verifier = new Webhook(secret);
  } catch (error) {
    throw new UsageError(`--secret is not a signing secret: ${(error as Error).message}`, USAGE);
  }
  const port = integerOption(parsed.values.port, '--port', 8787, 0, 65535);
  const status = integerOption(parsed.values.status, '--status', 204, 200, 599);
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      try {
        const event = verifier.verify(body, headers) as Record<string, unknown>;
        const line = { webhookId: headers['webhook-id'], type: event.type, scanId: event.scanId, status: event.status, verified: true, event };
        process.stdout.write(`${JSON.stringify(line)}\n`);
        res.writeHead(status).end();
      } catch (error) {
        const reason = error instanceof WebhookVerificationError ? error.message : 'not a webhook';
        process.stdout.write(`${JSON.stringify({ webhookId: headers['webhook-id'] ?? null, verified: false, reason })}\n`);
        res.writeHead(401, { 'Content-Type': 'text/plain' }).end(`${reason}\n`);
      }
    });
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  process.stderr.write(`listening on http://127.0.0.1:${address.port}/ (Ctrl-C stops)\n`);
  await new Promise<void>((resolve) => {
    const stop = () => server.close(() => resolve());
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  return 0;
}

export function webhooksCommand(argv: string[]): Promise<number> {
  return dispatch(COMMANDS, argv, USAGE);
}
