// The fetcher's policy: limits and the (UNSAFE) private-address switch.

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export interface FetchPolicy {
  /**
   * UNSAFE. When true the address block list is skipped entirely, so URLs may point at
   * loopback, private, link-local (cloud metadata!) and other internal addresses. Off by
   * default; meant for local development and tests only. URL checks (scheme, credentials),
   * limits and timeouts still apply.
   */
  allowPrivate: boolean;
  /** Largest accepted body in bytes, enforced on Content-Length and while streaming. */
  maxBytes: number;
  /** Limit for name resolution + TCP connect of each hop, in ms. */
  connectTimeoutMs: number;
  /** Limit for the whole fetch (every hop, headers and body), in ms. */
  totalTimeoutMs: number;
  /** Most redirects followed (301/302/303/307/308); each target is checked from scratch. */
  maxRedirects: number;
  /**
   * Name resolver; every address it returns is checked, and the socket connects only to
   * those addresses. Default: dns.promises.lookup(host, { all: true, verbatim: true }).
   */
  resolve?: (host: string) => Promise<ResolvedAddress[]>;
}

export const DEFAULT_FETCH_POLICY: Readonly<FetchPolicy> = Object.freeze({
  allowPrivate: false,
  maxBytes: 4 * 1024 * 1024,
  connectTimeoutMs: 3000,
  totalTimeoutMs: 10000,
  maxRedirects: 3,
});

/** The default policy with some fields overridden. */
export function fetchPolicy(overrides: Partial<FetchPolicy> = {}): FetchPolicy {
  return { ...DEFAULT_FETCH_POLICY, ...overrides };
}

/** Programmer errors in the policy throw TypeError (they are not the client's fault). */
export function validatePolicy(p: FetchPolicy): void {
  if (typeof p !== 'object' || p === null) throw new TypeError('fetch policy must be an object');
  if (typeof p.allowPrivate !== 'boolean') throw new TypeError('policy.allowPrivate must be a boolean');
  const positive = (name: keyof FetchPolicy) => {
    const v = p[name];
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
      throw new TypeError(`policy.${name} must be a positive finite number`);
    }
  };
  positive('maxBytes');
  positive('connectTimeoutMs');
  positive('totalTimeoutMs');
  if (!Number.isInteger(p.maxRedirects) || p.maxRedirects < 0) {
    throw new TypeError('policy.maxRedirects must be a non-negative integer');
  }
  if (p.resolve !== undefined && typeof p.resolve !== 'function') {
    throw new TypeError('policy.resolve must be a function');
  }
}
