// The client address of a request, as the service uses it (scan credential limiter, access log).
// Peers listed in CATCOMFORT_TRUSTED_PROXIES may name the client in `Forwarded` (RFC 7239, used
// when present) or `X-Forwarded-For`: the client is the rightmost address there that is not itself
// a trusted proxy. Anyone else's forwarding fields are ignored, so a client cannot pick its own key.
import net from 'node:net';

/** IPv4 clients of a dual-stack socket without the ::ffff: prefix. */
export function plainAddress(address: string | undefined): string {
  if (address === undefined) return '';
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

/** One hop of a forwarding field as an address, or null (`unknown`, obfuscated, malformed). */
function hopAddress(raw: string): string | null {
  let value = raw.trim();
  if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
  if (value.startsWith('[')) {
    const end = value.indexOf(']');
    if (end === -1) return null;
    value = value.slice(1, end);
  } else if (/^[\d.]+:\d+$/.test(value)) {
    value = value.slice(0, value.indexOf(':')); // IPv4 with a port
  }
  value = plainAddress(value.toLowerCase());
  return net.isIP(value) ? value : null;
}

/** The hops of `Forwarded` (its `for=` parameters), leftmost first. */
function forwardedHops(value: string): Array<string | null> {
  return value.split(',').map((element) => {
    for (const pair of element.split(';')) {
      const eq = pair.indexOf('=');
      if (eq !== -1 && pair.slice(0, eq).trim().toLowerCase() === 'for') return hopAddress(pair.slice(eq + 1));
    }
    return null;
  });
}

export class TrustedProxies {
  private readonly list = new net.BlockList();

  /** `entries`: addresses and CIDRs, already validated (CATCOMFORT_TRUSTED_PROXIES: src/config/kinds.ts). */
  constructor(entries: readonly string[]) {
    for (const entry of entries) {
      const [address, prefix] = entry.split('/') as [string, string | undefined];
      const family = net.isIPv6(address) ? 'ipv6' : 'ipv4';
      if (prefix === undefined) this.list.addAddress(address, family);
      else this.list.addSubnet(address, Number(prefix), family);
    }
  }

  has(address: string): boolean {
    return this.list.check(address, net.isIPv6(address) ? 'ipv6' : 'ipv4');
  }

  /**
   * The client of a request from `peer`: the peer itself unless it is trusted and a forwarding
   * field names hops; then the rightmost hop that is not trusted. An unreadable hop ends the walk
   * at the last trusted address before it.
   */
  clientOf(peer: string, forwarded: string | undefined, xForwardedFor: string | undefined): string {
    if (!this.has(peer)) return peer;
    const hops = forwarded !== undefined ? forwardedHops(forwarded) : xForwardedFor !== undefined ? xForwardedFor.split(',').map(hopAddress) : [];
    let client = peer;
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i]!;
      if (hop === null) return client;
      client = hop;
      if (!this.has(hop)) return hop;
    }
    return client;
  }
}
