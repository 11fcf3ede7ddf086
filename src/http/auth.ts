// API key check in constant time: every configured key is compared (as SHA-256 digests,
// so lengths never leak) and the loop never exits early.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

export class KeyRing {
  private readonly digests: Buffer[];

  constructor(keys: string[]) {
    this.digests = keys.map(digest);
  }

  /** Generates one random key (printed once by the caller) when none is configured. */
  static generateKey(): string {
    return `cc_${randomBytes(24).toString('base64url')}`;
  }

  addKey(key: string): void {
    this.digests.push(digest(key));
  }

  /** Adds a key known only by its digest (keys issued through the CLI are stored hashed). */
  addDigest(hexDigest: string): void {
    this.digests.push(Buffer.from(hexDigest, 'hex'));
  }

  check(candidate: string | undefined): boolean {
    if (candidate === undefined || candidate === '') return false;
    const given = digest(candidate);
    let ok = false;
    for (const known of this.digests) {
      if (timingSafeEqual(given, known)) ok = true;
    }
    return ok;
  }
}
