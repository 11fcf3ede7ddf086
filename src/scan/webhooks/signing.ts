// Standard Webhooks headers of one attempt, signed with the `standardwebhooks` library: one
// `v1,<signature>` per valid secret (two during a secret rotation's overlap), space-separated.
import { Webhook } from 'standardwebhooks';

export function webhookHeaders(webhookId: string, at: Date, body: string, secrets: readonly string[]): Record<string, string> {
  if (secrets.length === 0) throw new RangeError('no signing secret');
  return {
    'webhook-id': webhookId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new Webhook(secret).sign(webhookId, at, body)).join(' '),
  };
}
