// The service behind nginx with an upstream keepalive pool: HTTP/1.1 to the service, Connection "",
// and X-Forwarded-For from $proxy_add_x_forwarded_for. With 127.0.0.1 trusted, the service sees
// each client's own address: health, a prediction and a scan work through it, a guesser locks out
// only itself (partners verified before or never verified keep working), an X-Forwarded-For the
// guesser sends itself does not get it out, and the access log names each client.
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { createCredential, scanHeaders } from '../test/helpers/scan';
import { accessLogLine, call, show } from './helpers/client';
import { guessUntilLocked, partnerCalls, proxiedService, sharedChecks } from './helpers/proxied';

const GUESSER = '127.0.0.2';
const PARTNER = '127.0.0.3';
const SPOOFER = '127.0.0.4';

async function assertClient(server: Parameters<typeof accessLogLine>[0], ids: string[], client: string): Promise<void> {
  for (const id of ids) {
    const line = await accessLogLine(server, id);
    assert.equal(line.client, client, `access-log line of ${id}: ${JSON.stringify(line)}`);
  }
}

describe('behind nginx, keepalive upstream (HTTP/1.1, X-Forwarded-For)', () => {
  const test = proxiedService('keepalive');
  sharedChecks(test, 'keepalive');

  test('a guesser at 127.0.0.2 does not lock out partners at 127.0.0.3, verified before or not', async ({ server, nginx, env }) => {
    const known = createCredential(env, 'keepalive-known');
    const fresh = createCredential(env, 'keepalive-fresh');
    const target = createCredential(env, 'keepalive-target');
    const unused = createCredential(env, 'keepalive-unused');
    const verified = await call(nginx.url, '/scan', { headers: scanHeaders(known), from: PARTNER, requestId: 'keepalive-known-first' });
    assert.equal(verified.status, 200, `the known partner's first call: ${show(verified)}`);

    const lockout = await guessUntilLocked(nginx.url, target.keyId, GUESSER, 'keepalive');
    const knownIds = await partnerCalls(nginx.url, known, PARTNER, 'keepalive-known');
    // Never verified before the lockout: only a per-address limit on the real address lets it through.
    const freshIds = await partnerCalls(nginx.url, fresh, PARTNER, 'keepalive-fresh');
    // A valid pair that is not in the verified cache still goes to the store, which the lockout refuses.
    const stillLocked = await call(nginx.url, '/scan', { headers: scanHeaders(unused), from: GUESSER, requestId: 'keepalive-guesser-valid' });
    assert.equal(stillLocked.status, 429, `the guesser's address stays locked, even with a valid (never verified) pair: ${show(stillLocked)}`);

    await assertClient(server, [...lockout.requestIds, 'keepalive-guesser-valid'], GUESSER);
    await assertClient(server, ['keepalive-known-first', ...knownIds, ...freshIds], PARTNER);
  });

  test('a guesser sending its own X-Forwarded-For is still limited at its real address', async ({ server, nginx, env }) => {
    const target = createCredential(env, 'keepalive-spoof-target');
    // A new made-up address each time; nginx appends the real one, which the service must take.
    const lockout = await guessUntilLocked(nginx.url, target.keyId, SPOOFER, 'keepalive-spoof', (attempt) => ({
      'x-forwarded-for': `127.0.0.${10 + attempt}`,
    }));
    await assertClient(server, lockout.requestIds, SPOOFER);
  });
});
