// Credential secrets: new key ids and secrets, their SHA-256 digests, and scrypt hashes checked in
// constant time.
import { createHash, randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/** An API or admin key (printed or returned once; stored as its sha256 digest). */
export function newApiKey(): string {
  return `cc_${randomBytes(24).toString('base64url')}`;
}

/** Public key id of a scan credential. */
export function newKeyId(): string {
  return `sk_${randomBytes(12).toString('hex')}`;
}

/** Secret of a scan credential: 256 random bits. */
export function newSecret(): string {
  return `ss_${randomBytes(32).toString('base64url')}`;
}

/**
 * Signing secret of a credential's webhooks, in the Standard Webhooks form: `whsec_` and the
 * base64 of 32 random bytes. Kept as it is (signing needs it), shown once when issued.
 */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

// scrypt parameters; stored with every hash so they can be raised later without breaking old ones.
const SCRYPT = { N: 16384, r: 8, p: 1, keylen: 32 };

function scrypt(secret: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scryptCb(secret, salt, keylen, { ...options, maxmem: 256 * 1024 * 1024 }, (error, key) => {
      if (error) reject(error);
      else resolve(key);
    });
  });
}

/** `scrypt$N$r$p$salt(base64)$hash(base64)` with a fresh 16-byte salt. */
export async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(secret, salt, SCRYPT.keylen, { N: SCRYPT.N, r: SCRYPT.r, p: SCRYPT.p });
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64'), hash.toString('base64')].join('$');
}

interface ParsedHash {
  N: number;
  r: number;
  p: number;
  salt: Buffer;
  hash: Buffer;
}

function parseHash(stored: string): ParsedHash | null {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return null;
  const [N, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  if (![N, r, p].every((n) => Number.isInteger(n) && n > 0)) return null;
  const salt = Buffer.from(parts[4]!, 'base64');
  const hash = Buffer.from(parts[5]!, 'base64');
  if (salt.length === 0 || hash.length === 0) return null;
  return { N, r, p, salt, hash };
}

/**
 * True when `secret` matches `stored`, compared in constant time. With `stored` null (unknown or
 * revoked key id) the answer is false at once: key ids are public identifiers, so only a known key
 * id costs an scrypt derivation, and failed attempts are limited per client address.
 */
export async function verifySecret(secret: string, stored: string | null): Promise<boolean> {
  const parsed = stored === null ? null : parseHash(stored);
  if (parsed === null) return false;
  const derived = await scrypt(secret, parsed.salt, parsed.hash.length, { N: parsed.N, r: parsed.r, p: parsed.p });
  return timingSafeEqual(derived, parsed.hash);
}
