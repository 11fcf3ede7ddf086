// Scan credentials: an API key id (`api-key`) plus a secret (`api-secret`). The store checks
// them with scrypt in constant time; successful checks are cached briefly (by a SHA-256 of the
// pair) so a busy client does not pay scrypt on every request. Revocation applies within the TTL.
import { createHash } from 'node:crypto';
import type { ScanStore } from './store';

export class CredentialVerifier {
  private readonly cache = new Map<string, { ownerId: string; expires: number }>();

  constructor(
    private readonly store: ScanStore,
    private readonly ttlMs = 30_000,
    private readonly maxEntries = 10_000,
  ) {}

  async verify(keyId: string | undefined, secret: string | undefined): Promise<string | null> {
    if (!keyId || !secret || keyId.length > 256 || secret.length > 256) return null;
    const cacheKey = createHash('sha256').update(keyId).update('\0').update(secret).digest('hex');
    const hit = this.cache.get(cacheKey);
    const now = Date.now();
    if (hit && hit.expires > now) return hit.ownerId;
    const ownerId = await this.store.verifyCredential(keyId, secret);
    if (ownerId !== null) {
      if (this.cache.size >= this.maxEntries) this.cache.clear();
      this.cache.set(cacheKey, { ownerId, expires: now + this.ttlMs });
    }
    return ownerId;
  }
}
