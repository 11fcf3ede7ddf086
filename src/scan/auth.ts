// Scan credentials: an API key id (`api-key`) plus a secret (`api-secret`). The store checks
// them with scrypt in constant time; successful checks are cached briefly (by a SHA-256 of the
// pair) so a busy client does not pay scrypt on every request. Revocation applies within the TTL.
// Guessing is limited per client address (FailureThrottle), partners are not: a pair answered from
// the cache, or joining an identical check under way, costs no token and is never refused, nor does
// an unknown or revoked key id (refused after one indexed lookup, without scrypt). Only a check
// that runs scrypt takes a token (given back when the secret matches), and only such checks are
// refused while the address is locked out.
import { createHash } from 'node:crypto';
import { ApiError } from '../errors';
import { Semaphore } from '../pipeline/semaphore';
import type { FailureThrottle } from './failure-throttle';
import type { StoreHealth } from './store-health';
import type { Store } from '../store';

// The public shapes of issued credentials (src/store/secrets.ts): anything else is refused
// without spending scrypt on it.
const KEY_ID = /^sk_[0-9a-f]{24}$/;
const SECRET = /^ss_[A-Za-z0-9_-]{43}$/;

export class CredentialVerifier {
  private readonly cache = new Map<string, { ownerId: string; expires: number }>();
  /** scrypt runs at once (each ~40 ms and 16 MB on the libuv pool); more are refused with 429. */
  private readonly slots = new Semaphore(4);
  /** Checks under way, so a burst with the same credential costs one scrypt. */
  private readonly inFlight = new Map<string, Promise<string | null>>();

  constructor(
    private readonly store: Store,
    private readonly health: StoreHealth,
    private readonly throttle: FailureThrottle,
    private readonly ttlMs = 30_000,
    private readonly maxEntries = 10_000,
  ) {}

  /** The owner of the credential, or null when it is not valid; throws ApiError auth_throttled (429, Retry-After). */
  async verify(keyId: string | undefined, secret: string | undefined, address: string): Promise<string | null> {
    if (!keyId || !secret || !KEY_ID.test(keyId) || !SECRET.test(secret)) return null;
    const cacheKey = createHash('sha256').update(keyId).update('\0').update(secret).digest('hex');
    const hit = this.cache.get(cacheKey);
    if (hit && hit.expires > Date.now()) return hit.ownerId;
    const pending = this.inFlight.get(cacheKey);
    if (pending) return pending;
    const check = this.check(keyId, secret, cacheKey, address);
    this.inFlight.set(cacheKey, check);
    void check.finally(() => this.inFlight.delete(cacheKey)).catch(() => undefined);
    return check;
  }

  /** One check in the store: scrypt, for a usable key id, takes a token that goes back unless the secret was wrong. */
  private async check(keyId: string, secret: string, cacheKey: string, address: string): Promise<string | null> {
    const credential = await this.health.track('authenticate', () => this.store.credentials.find(keyId));
    if (credential === null) return null;
    const wait = this.throttle.take(address);
    if (wait > 0) throw new ApiError('auth_throttled', undefined, {}, { 'Retry-After': String(wait) });
    let matches: boolean;
    try {
      matches = await this.slots.run(() => credential.matches(secret));
    } catch (error) {
      this.throttle.giveBack(address); // not a failed check (the service is busy)
      throw error;
    }
    if (!matches) return null;
    this.throttle.giveBack(address);
    if (this.cache.size >= this.maxEntries) this.cache.clear();
    this.cache.set(cacheKey, { ownerId: credential.id, expires: Date.now() + this.ttlMs });
    return credential.id;
  }
}
