// Scan credentials: an API key id (`api-key`) plus a secret (`api-secret`). The store checks
// them with scrypt in constant time; successful checks are cached briefly (by a SHA-256 of the
// pair) so a busy client does not pay scrypt on every request. Revocation applies within the TTL.
// Failed checks are limited per client address (FailureThrottle).
import { createHash } from 'node:crypto';
import { ApiError } from '../http/errors';
import { Semaphore } from '../pipeline/semaphore';
import type { FailureThrottle } from './failure-throttle';
import type { Store } from './store';

// The public shapes of issued credentials (src/scan/store/common.ts): anything else is refused
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
    private readonly throttle: FailureThrottle,
    private readonly ttlMs = 30_000,
    private readonly maxEntries = 10_000,
  ) {}

  /** The owner of the credential, or null when it is not valid; throws ApiError auth_throttled (429, Retry-After). */
  async verify(keyId: string | undefined, secret: string | undefined, address: string): Promise<string | null> {
    const wait = this.throttle.take(address);
    if (wait > 0) throw new ApiError('auth_throttled', undefined, {}, { 'Retry-After': String(wait) });
    const ownerId = await this.check(keyId, secret).catch((error: unknown) => {
      this.throttle.giveBack(address); // not a failed check (the service is busy)
      throw error;
    });
    if (ownerId !== null) this.throttle.giveBack(address);
    return ownerId;
  }

  private async check(keyId: string | undefined, secret: string | undefined): Promise<string | null> {
    if (!keyId || !secret || !KEY_ID.test(keyId) || !SECRET.test(secret)) return null;
    const cacheKey = createHash('sha256').update(keyId).update('\0').update(secret).digest('hex');
    const hit = this.cache.get(cacheKey);
    const now = Date.now();
    if (hit && hit.expires > now) return hit.ownerId;
    let pending = this.inFlight.get(cacheKey);
    if (!pending) {
      pending = this.slots.run(() => this.store.credentials.verify(keyId, secret));
      this.inFlight.set(cacheKey, pending);
      void pending.finally(() => this.inFlight.delete(cacheKey)).catch(() => undefined);
    }
    const ownerId = await pending;
    if (ownerId !== null) {
      if (this.cache.size >= this.maxEntries) this.cache.clear();
      this.cache.set(cacheKey, { ownerId, expires: now + this.ttlMs });
    }
    return ownerId;
  }
}
