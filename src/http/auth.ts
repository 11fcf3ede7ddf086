// API key check in constant time: every configured key is compared (as SHA-256 digests,
// so lengths never leak) and the loop never exits early.
import { createHash, timingSafeEqual } from 'node:crypto';

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

export class KeyRing {
  private readonly digests: Buffer[];
  /** Keys issued with the CLI (stored hashed in the database), refreshed periodically. */
  private issued: Buffer[] = [];

  constructor(keys: string[]) {
    this.digests = keys.map(digest);
  }

  setIssuedDigests(hexDigests: string[]): void {
    this.issued = hexDigests.map((hex) => Buffer.from(hex, 'hex')).filter((b) => b.length === 32);
  }

  addKey(key: string): void {
    this.digests.push(digest(key));
  }

  check(candidate: string | undefined): boolean {
    if (candidate === undefined || candidate === '') return false;
    const given = digest(candidate);
    let ok = false;
    for (const known of this.digests) {
      if (timingSafeEqual(given, known)) ok = true;
    }
    for (const known of this.issued) {
      if (timingSafeEqual(given, known)) ok = true;
    }
    return ok;
  }
}
