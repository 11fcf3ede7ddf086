// Scan credential checks as a denial-of-service target: unknown key ids cost no hashing, failed
// attempts are limited per client address, and partners with valid credentials are never throttled
// by the checks they share or have passed.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { mock, test } from 'node:test';
import type { ApiError } from '../src/errors';
import { CredentialVerifier } from '../src/scan/auth';
import { FailureThrottle } from '../src/scan/failure-throttle';
import { openStore } from '../src/store';
import { StoreHealth } from '../src/scan/store-health';
import { request } from './helpers/http';
import { createCredential, scanHeaders, storeEnv } from './helpers/scan';
import { startServer } from './helpers/server';

test('the store derives scrypt only for a known, unrevoked key id', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cc-auth-'));
  const store = await openStore({ dataDir: dir });
  t.after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const good = await store.credentials.create('good');
  const revoked = await store.credentials.create('revoked');
  await store.credentials.revoke(revoked.keyId);
  const scrypt = mock.method(crypto, 'scrypt');
  t.after(() => scrypt.mock.restore());

  assert.equal(await store.credentials.verify('sk_000000000000000000000000', good.secret), null);
  assert.equal(await store.credentials.verify(revoked.keyId, revoked.secret), null);
  assert.equal(scrypt.mock.callCount(), 0, 'unknown and revoked key ids are refused without hashing');
  assert.equal(await store.credentials.verify(good.keyId, `${good.secret.slice(0, -1)}x`), null);
  assert.equal(await store.credentials.verify(good.keyId, good.secret), good.id);
  assert.equal(scrypt.mock.callCount(), 2);
});

test('the failure throttle: a bucket per address, refilled over a minute, successes give back', () => {
  let now = 0;
  const throttle = new FailureThrottle(3, () => now);
  for (let i = 0; i < 3; i++) assert.equal(throttle.take('a'), 0);
  assert.equal(throttle.take('a'), 20, 'a token comes back every 20 s at 3 per minute');
  assert.equal(throttle.take('b'), 0, 'other addresses are not affected');
  now += 19_000;
  assert.equal(throttle.take('a'), 1);
  now += 1_000;
  assert.equal(throttle.take('a'), 0);
  throttle.giveBack('a');
  assert.equal(throttle.take('a'), 0, 'a successful attempt costs nothing');
  assert.ok(throttle.take('a') > 0);
  now += 60_000;
  for (let i = 0; i < 3; i++) assert.equal(throttle.take('a'), 0, 'full again after a minute');
});

test('past the limit of failed checks, an address gets 429 with Retry-After for pairs it has not passed recently', async (t) => {
  const env = storeEnv(mkdtempSync(path.join(os.tmpdir(), 'cc-auth-')), null);
  const server = await startServer({ ...env, CATCOMFORT_SCAN_AUTH_FAILURES_PER_MINUTE: '3' });
  t.after(() => server.stop());
  const good = createCredential(env, 'good');
  const fresh = createCredential(env, 'fresh');
  assert.equal((await request(`${server.url}/scan`, { headers: scanHeaders(good), key: null })).status, 200);
  const wrong = { keyId: good.keyId, secret: `ss_${'A'.repeat(43)}` };
  const unknown = { keyId: 'sk_000000000000000000000000', secret: good.secret };
  for (const credential of [wrong, unknown, wrong, unknown, wrong]) {
    assert.equal((await request(`${server.url}/scan`, { headers: scanHeaders(credential), key: null })).status, 401);
  }
  const refused = await request(`${server.url}/scan`, { headers: scanHeaders(fresh), key: null });
  assert.equal(refused.status, 429, 'three wrong secrets used the tokens; the unknown key ids ran no scrypt and took none');
  assert.equal(refused.body.error.code, 'too_many_failed_attempts');
  assert.ok(Number(refused.headers.get('retry-after')) >= 1);
  assert.equal((await request(`${server.url}/scan`, { headers: scanHeaders(unknown), key: null })).status, 401, 'an unknown key id is refused without scrypt, lockout or not');
  assert.equal((await request(`${server.url}/scan`, { headers: scanHeaders(good), key: null })).status, 200, 'the pair verified a moment ago still works');
  assert.equal((await request(`${server.url}/v2/models`)).status, 200, 'v2 keys are not affected');
});

test('the verifier limits guessers, not partners: cached and shared checks cost no token and pass a lockout', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cc-auth-'));
  const store = await openStore({ dataDir: dir });
  t.after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const partner = await store.credentials.create('partner');
  const later = await store.credentials.create('later');
  const scrypt = mock.method(crypto, 'scrypt');
  t.after(() => scrypt.mock.restore());
  const verifier = new CredentialVerifier(store, new StoreHealth(), new FailureThrottle(3));

  const burst = await Promise.all(Array.from({ length: 64 }, () => verifier.verify(partner.keyId, partner.secret, 'a')));
  assert.deepEqual(new Set(burst), new Set([partner.id]), '64 parallel checks of a valid pair all pass');
  assert.equal(scrypt.mock.callCount(), 1, 'they share one scrypt');

  const wrong = `ss_${'A'.repeat(43)}`;
  const shared = await Promise.all(Array.from({ length: 10 }, () => verifier.verify(partner.keyId, wrong, 'a')));
  assert.deepEqual(new Set(shared), new Set([null]));
  assert.equal(await verifier.verify(later.keyId, wrong, 'a'), null);
  assert.equal(await verifier.verify(partner.keyId, `ss_${'B'.repeat(43)}`, 'a'), null, 'ten identical wrong checks cost one token: two more run');
  await assert.rejects(verifier.verify(later.keyId, later.secret, 'a'), (e: ApiError) => e.kind === 'auth_throttled', 'a pair never verified is refused from the locked-out address');
  assert.equal(await verifier.verify(partner.keyId, partner.secret, 'a'), partner.id, 'a pair verified within the TTL keeps working there');
  assert.equal(await verifier.verify('sk_000000000000000000000000', later.secret, 'a'), null, 'an unknown key id runs no scrypt and is not refused');
  assert.equal(await verifier.verify(later.keyId, later.secret, 'b'), later.id, 'other addresses are not affected');
});

test('64 parallel scan requests with valid credentials from one address: all 200', async (t) => {
  const env = storeEnv(mkdtempSync(path.join(os.tmpdir(), 'cc-auth-')), null);
  const server = await startServer({ ...env, CATCOMFORT_SCAN_AUTH_FAILURES_PER_MINUTE: '3' });
  t.after(() => server.stop());
  const good = createCredential(env, 'good');
  const statuses = await Promise.all(Array.from({ length: 64 }, () => request(`${server.url}/scan`, { headers: scanHeaders(good), key: null }).then((r) => r.status)));
  assert.deepEqual(new Set(statuses), new Set([200]));
});
