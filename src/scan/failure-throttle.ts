// Failed scan credential checks, limited per client address: a token bucket per address that
// holds `perMinute` tokens and refills at that rate. Every check that runs scrypt takes a
// token before it runs (so a burst of parallel guesses is limited too) and a successful check gives
// it back. With no token left, such checks from that address are refused until one is back
// (CredentialVerifier still answers pairs it verified recently from its cache).

/** Addresses remembered at most; past it, addresses with a full bucket are forgotten first. */
const MAX_ADDRESSES = 10_000;

interface Bucket {
  tokens: number;
  at: number;
}

export class FailureThrottle {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly perMinute: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes a token for one attempt: 0 when taken, else the seconds until one is available. */
  take(address: string): number {
    const tokens = this.tokens(address);
    if (tokens < 1) return Math.max(1, Math.ceil(((1 - tokens) * 60) / this.perMinute - 1e-9));
    this.set(address, tokens - 1);
    return 0;
  }

  /** The attempt succeeded: its token goes back. */
  giveBack(address: string): void {
    this.set(address, Math.min(this.perMinute, this.tokens(address) + 1));
  }

  private tokens(address: string): number {
    const bucket = this.buckets.get(address);
    if (!bucket) return this.perMinute;
    const refilled = ((this.now() - bucket.at) / 60_000) * this.perMinute;
    return Math.min(this.perMinute, bucket.tokens + refilled);
  }

  private set(address: string, tokens: number): void {
    if (!this.buckets.has(address) && this.buckets.size >= MAX_ADDRESSES) this.forgetIdle();
    this.buckets.set(address, { tokens, at: this.now() });
  }

  private forgetIdle(): void {
    for (const address of this.buckets.keys()) if (this.tokens(address) >= this.perMinute) this.buckets.delete(address);
    // Still full: the oldest entries go (Map keeps insertion order).
    for (const address of this.buckets.keys()) {
      if (this.buckets.size < MAX_ADDRESSES) break;
      this.buckets.delete(address);
    }
  }
}
