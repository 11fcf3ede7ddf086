// Keys of the admin listener: CATCOMFORT_ADMIN_KEYS and keys issued with `catcomfort keys create
// --admin` (stored as sha256 digests, reloaded every 30 s). Separate from the API keys both ways.
// A key is known by an id for the audit log: the issued key's id, or `env-` and the first 12 hex
// digits of the sha256 of a configured key; never the key.
import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (key: string): Buffer => createHash('sha256').update(key, 'utf8').digest();

export class AdminKeys {
  private readonly configured: Array<{ id: string; digest: Buffer }>;
  private issued: Array<{ id: string; digest: Buffer }> = [];

  constructor(keys: string[]) {
    this.configured = [];
    for (const key of keys) this.addConfigured(key);
  }

  /** A key generated at start when none is configured (printed once by the caller). */
  addConfigured(key: string): void {
    const d = digest(key);
    this.configured.push({ id: `env-${d.toString('hex').slice(0, 12)}`, digest: d });
  }

  setIssued(keys: Array<{ id: string; digest: string }>): void {
    this.issued = keys.map((k) => ({ id: k.id, digest: Buffer.from(k.digest, 'hex') })).filter((k) => k.digest.length === 32);
  }

  /** The id of the key, or null; every known key is compared, in constant time. */
  identify(candidate: string | undefined): string | null {
    if (!candidate) return null;
    const given = digest(candidate);
    let id: string | null = null;
    for (const known of [...this.configured, ...this.issued]) if (timingSafeEqual(given, known.digest)) id = known.id;
    return id;
  }
}
