// The service behind nginx with a bare proxy_pass: nginx speaks HTTP/1.0 to the service with
// Connection: close and sends no X-Forwarded-For, so every client is 127.0.0.1 to the service.
// Health, a prediction and a scan work through it, and a guesser that locks out 127.0.0.1 does
// not lock out a partner whose credential was verified just before (within the cache TTL).
import assert from 'node:assert/strict';
import { describe } from 'node:test';
import { createCredential, scanHeaders } from '../test/helpers/scan';
import { accessLogLine, call, show } from './helpers/client';
import { guessUntilLocked, partnerCalls, proxiedService, sharedChecks } from './helpers/proxied';

const GUESSER = '127.0.0.2';
const PARTNER = '127.0.0.3';

describe('behind nginx, default proxy_pass (HTTP/1.0 upstream, no X-Forwarded-For)', () => {
  const test = proxiedService('http10');
  sharedChecks(test, 'http10');

  test('a guesser locking out 127.0.0.1 does not lock out a partner verified just before', async ({ server, nginx, env }) => {
    const partner = createCredential(env, 'http10-partner');
    const target = createCredential(env, 'http10-target');
    const verified = await call(nginx.url, '/scan', { headers: scanHeaders(partner), from: PARTNER, requestId: 'http10-partner-first' });
    assert.equal(verified.status, 200, `the partner's first call: ${show(verified)}`);

    const lockout = await guessUntilLocked(nginx.url, target.keyId, GUESSER, 'http10');
    const after = await partnerCalls(nginx.url, partner, PARTNER, 'http10-partner');

    // No X-Forwarded-For: the service sees nginx's address for everyone.
    for (const id of ['http10-partner-first', ...lockout.requestIds, ...after]) {
      const line = await accessLogLine(server, id);
      assert.equal(line.client, '127.0.0.1', `access-log line of ${id}: ${JSON.stringify(line)}`);
    }
  });
});
