// IP address parsing and the SSRF block list.
//
// Everything here works on raw bytes (4 for IPv4, 16 for IPv6) with a tiny CIDR matcher, so
// the rules are explicit and testable. Inputs are the canonical textual forms that reach us:
// the WHATWG URL parser has already normalised odd IPv4 notations in URLs (2130706433,
// 0x7f.1, 0177.0.0.1, 127.1, full-width digits ... all become dotted decimal) and the resolver
// returns textual addresses. Anything we cannot parse strictly is treated as blocked
// (fail closed), including IPv6 zone ids ("fe80::1%eth0").

export interface AddressVerdict {
  blocked: boolean;
  /** Short, internal label of the matching rule (for logs and tests; not for clients). */
  reason: string;
}

/** Strict dotted-decimal IPv4 → 4 bytes, or null. */
export function parseIPv4(s: string): Uint8Array | null {
  const parts = s.split('.');
  if (parts.length !== 4) return null;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const p = parts[i]!;
    if (!/^(0|[1-9][0-9]{0,2})$/.test(p)) return null;
    const n = Number(p);
    if (n > 255) return null;
    out[i] = n;
  }
  return out;
}

/** IPv6 text (with optional trailing dotted IPv4, no zone id, no brackets) → 16 bytes, or null. */
export function parseIPv6(input: string): Uint8Array | null {
  let s = input;
  if (s.length === 0 || s.length > 45 || s.includes('%')) return null;
  const out = new Uint8Array(16);
  // Trailing embedded IPv4 ("::ffff:1.2.3.4") becomes two hex groups.
  let tail: number[] = [];
  const lastColon = s.lastIndexOf(':');
  if (lastColon === -1) return null;
  if (s.indexOf('.', lastColon) !== -1) {
    const v4 = parseIPv4(s.slice(lastColon + 1));
    if (!v4) return null;
    tail = [(v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!];
    s = s.slice(0, lastColon + 1);
    // "::1.2.3.4" leaves "::"; "1::2:1.2.3.4" leaves "1::2:" — drop the dangling colon unless
    // it is part of a "::".
    if (!s.endsWith('::')) s = s.slice(0, -1);
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const parseGroups = (h: string): number[] | null => {
    if (h === '') return [];
    const groups = h.split(':');
    const res: number[] = [];
    for (const g of groups) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
      res.push(parseInt(g, 16));
    }
    return res;
  };
  const head = parseGroups(halves[0]!);
  if (!head) return null;
  let groups: number[];
  if (halves.length === 2) {
    const rest = parseGroups(halves[1]!);
    if (!rest) return null;
    const known = head.length + rest.length + tail.length;
    if (known > 7) return null; // "::" must stand for at least one group
    groups = [...head, ...new Array<number>(8 - known).fill(0), ...rest, ...tail];
  } else {
    groups = [...head, ...tail];
    if (groups.length !== 8) return null;
  }
  for (let i = 0; i < 8; i++) {
    out[i * 2] = groups[i]! >> 8;
    out[i * 2 + 1] = groups[i]! & 0xff;
  }
  return out;
}

/** Any textual IP → bytes (4 or 16), or null when it is not a strictly valid address. */
export function parseIp(s: string): Uint8Array | null {
  if (s.startsWith('[') && s.endsWith(']')) s = s.slice(1, -1);
  return s.includes(':') ? parseIPv6(s) : parseIPv4(s);
}

/** A stable key for comparing addresses written differently ("::1" vs "0:0:0:0:0:0:0:1"). */
export function addressKey(s: string): string | null {
  const b = parseIp(s);
  return b ? Buffer.from(b).toString('hex') : null;
}

interface Cidr {
  bytes: Uint8Array;
  bits: number;
  reason: string;
}

function cidr(text: string, reason: string): Cidr {
  const [addr, len] = text.split('/');
  const bytes = parseIp(addr!);
  if (!bytes) throw new Error(`bad CIDR ${text}`);
  return { bytes, bits: Number(len), reason };
}

function inCidr(ip: Uint8Array, c: Cidr): boolean {
  if (ip.length !== c.bytes.length) return false;
  let bits = c.bits;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((ip[i]! & mask) !== (c.bytes[i]! & mask)) return false;
  }
  return true;
}

// IPv4 ranges that are not globally reachable unicast (IANA special-purpose registry).
const V4_BLOCKED: Cidr[] = [
  cidr('0.0.0.0/8', 'this-network'), // incl. 0.0.0.0, which Linux connects to as localhost
  cidr('10.0.0.0/8', 'private'),
  cidr('100.64.0.0/10', 'shared-cgnat'),
  cidr('127.0.0.0/8', 'loopback'),
  cidr('169.254.0.0/16', 'link-local'), // incl. 169.254.169.254 cloud metadata
  cidr('172.16.0.0/12', 'private'),
  cidr('192.0.0.0/24', 'ietf-protocol-assignments'),
  cidr('192.0.2.0/24', 'documentation'),
  cidr('192.88.99.0/24', '6to4-relay-anycast'),
  cidr('192.168.0.0/16', 'private'),
  cidr('198.18.0.0/15', 'benchmarking'),
  cidr('198.51.100.0/24', 'documentation'),
  cidr('203.0.113.0/24', 'documentation'),
  cidr('224.0.0.0/4', 'multicast'),
  cidr('240.0.0.0/4', 'reserved'), // incl. 255.255.255.255 broadcast
];

export function classifyIPv4(b: Uint8Array): AddressVerdict {
  for (const c of V4_BLOCKED) if (inCidr(b, c)) return { blocked: true, reason: c.reason };
  return { blocked: false, reason: 'public' };
}

// IPv6 forms that carry an IPv4 address. Decision per form:
//  - ::ffff:0:0/96 (IPv4-mapped): a socket to it IS a socket to the IPv4 → judge the IPv4.
//  - ::ffff:0:0:0/96 (IPv4-translated, SIIT): same, judge the IPv4.
//  - 64:ff9b::/96 (NAT64 well-known prefix): the gateway connects to the embedded IPv4 → judge
//    the IPv4 (public ones stay allowed so IPv6-only clusters behind DNS64 keep working).
//  - 2002::/16 (6to4): the embedded IPv4 (bits 16-47) is the tunnel end point → judge it.
//  - ::/96 (IPv4-compatible, deprecated since RFC 4291): blocked entirely — nothing legitimate
//    uses it and some stacks route it to the embedded IPv4 via automatic tunnels.
//  - 64:ff9b:1::/48 (local-use NAT64, RFC 8215): blocked entirely — the embedding depends on
//    the operator's prefix length, so we cannot reliably find the IPv4 (fail closed).
//  - 2001::/32 (Teredo): blocked entirely — it embeds a server IPv4 (bits 32-63) and an
//    obfuscated client IPv4 (last 32 bits XOR 0xffffffff), either of which may be internal,
//    the protocol is obsolete and no image host lives there.
const V6_SPECIAL: Cidr[] = [
  cidr('::/128', 'unspecified'),
  cidr('::1/128', 'loopback'),
];
const V6_MAPPED = cidr('::ffff:0:0/96', 'ipv4-mapped');
const V6_TRANSLATED = cidr('::ffff:0:0:0/96', 'ipv4-translated');
const V6_NAT64 = cidr('64:ff9b::/96', 'nat64');
const V6_6TO4 = cidr('2002::/16', '6to4');
const V6_BLOCKED: Cidr[] = [
  cidr('::/96', 'ipv4-compatible'),
  cidr('64:ff9b:1::/48', 'nat64-local-use'),
  cidr('2001::/32', 'teredo'),
  cidr('100::/64', 'discard-only'),
  cidr('fe80::/10', 'link-local'),
  cidr('fec0::/10', 'site-local'),
  cidr('fc00::/7', 'unique-local'),
  cidr('ff00::/8', 'multicast'),
  cidr('2001:db8::/32', 'documentation'),
  cidr('3fff::/20', 'documentation'),
  // IETF protocol assignments (benchmarking 2001:2::/48, ORCHID 2001:10::/28 and 2001:20::/28,
  // AMT, AS112 ...): special-purpose space, never an image host.
  cidr('2001::/23', 'ietf-protocol-assignments'),
];
// Only 2000::/3 is allocated as global unicast; everything else is blocked wholesale.
const V6_GLOBAL_UNICAST = cidr('2000::/3', 'global-unicast');

function embedded(verdict: AddressVerdict, form: string): AddressVerdict {
  return { blocked: verdict.blocked, reason: `${form}(${verdict.reason})` };
}

export function classifyIPv6(b: Uint8Array): AddressVerdict {
  for (const c of V6_SPECIAL) if (inCidr(b, c)) return { blocked: true, reason: c.reason };
  if (inCidr(b, V6_MAPPED)) return embedded(classifyIPv4(b.subarray(12, 16)), V6_MAPPED.reason);
  if (inCidr(b, V6_TRANSLATED)) return embedded(classifyIPv4(b.subarray(12, 16)), V6_TRANSLATED.reason);
  if (inCidr(b, V6_NAT64)) return embedded(classifyIPv4(b.subarray(12, 16)), V6_NAT64.reason);
  if (inCidr(b, V6_6TO4)) return embedded(classifyIPv4(b.subarray(2, 6)), V6_6TO4.reason);
  for (const c of V6_BLOCKED) if (inCidr(b, c)) return { blocked: true, reason: c.reason };
  if (!inCidr(b, V6_GLOBAL_UNICAST)) return { blocked: true, reason: 'not-global-unicast' };
  return { blocked: false, reason: 'public' };
}

/** Is this textual address one the fetcher must never connect to? Unparseable → blocked. */
export function classifyAddress(address: string): AddressVerdict {
  const b = parseIp(address);
  if (!b) return { blocked: true, reason: 'unparseable' };
  return b.length === 4 ? classifyIPv4(b) : classifyIPv6(b);
}
