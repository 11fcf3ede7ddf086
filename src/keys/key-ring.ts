// API key check in constant time: every configured key is compared (as SHA-256 digests,
// so lengths never leak) and the loop never exits early. A key that passed is remembered until
// the keys change, so a client's key is hashed once, not on every request; that its check is then
// quicker tells the client only what the answer tells it anyway: the key is valid.
import { createHash, timingSafeEqual } from 'node:crypto';

/** Keys remembered as passed at most; past it the memory starts again. */
const ACCEPTED_MAX = 256;

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

export class KeyRing {
  private readonly digests: Buffer[];
  /** Keys issued with the CLI (stored hashed in the database), refreshed periodically. */
  private issued: Buffer[] = [];
  /** Candidates that passed since the issued keys were last set. */
  private readonly accepted = new Set<string>();

  constructor(keys: string[]) {
    this.digests = keys.map(digest);
  }

  setIssuedDigests(hexDigests: string[]): void {
    this.issued = hexDigests.map((hex) => Buffer.from(hex, 'hex')).filter((b) => b.length === 32);
    this.accepted.clear(); // a revoked key is not remembered past the refresh that drops it
  }

  addKey(key: string): void {
    this.digests.push(digest(key));
  }

  check(candidate: string | undefined): boolean {
    if (candidate === undefined || candidate === '') return false;
    if (this.accepted.has(candidate)) return true;
    const given = digest(candidate);
    let ok = false;
    for (const known of this.digests) {
      if (timingSafeEqual(given, known)) ok = true;
    }
    for (const known of this.issued) {
      if (timingSafeEqual(given, known)) ok = true;
    }
    if (ok) {
      if (this.accepted.size >= ACCEPTED_MAX) this.accepted.clear();
      this.accepted.add(candidate);
    }
    return ok;
  }
}
