// The SSRF-safe fetcher of user-supplied image URLs (behaviour modelled on go-camo/imgproxy).
//
// How addresses are enforced:
//  - Literal IP hosts (already normalised by the WHATWG URL parser: 2130706433, 0x7f.1, 127.1,
//    [::ffff:127.0.0.1] ... all arrive as canonical text) are checked before any request is
//    created; a blocked literal never reaches the resolver or http(s).request.
//  - Names are resolved inside a custom `lookup` passed to http(s).request, i.e. at CONNECT
//    time, by the same call whose answer the socket connects to. Every returned address is
//    checked and the connection is refused if ANY is blocked, so DNS rebinding (a public answer
//    at check time, a private one at connect time) has no window: there is no separate check.
//  - After the TCP connect, the socket's remote address must be one of the addresses approved
//    above (belt and braces against a future Node change that would bypass `lookup`).
//  - Every redirect target goes through all of this again from scratch; no sockets are reused
//    (agent: false), so each hop resolves and connects anew.
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { FetchRefusedError } from './errors';
import { addressKey, classifyAddress, parseIp } from './ip';
import { validatePolicy, type FetchPolicy, type ResolvedAddress } from './policy';

export const USER_AGENT = 'CatComfort-Fetcher/1.0';
/** URLs longer than this are refused as url_invalid. */
export const MAX_URL_LENGTH = 4096;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

export interface FetchedImage {
  bytes: Buffer;
  /** The bare media type, lower-cased, parameters dropped (e.g. "image/png"). */
  contentType: string;
  /** The URL the image finally came from (after redirects, without fragment). */
  finalUrl: string;
}

/**
 * TEST SEAM — not exported from index.ts and never used by the service.
 *
 * `connectAddress` rewrites an address AFTER it passed the block list, just before the socket
 * connects to it: it simulates a network in which a name that resolves to a public address is
 * reachable at 127.0.0.1. That lets tests run the real check with allowPrivate=false on the
 * first hop (the resolver says `photos.test` is 93.184.216.34, the socket really goes to the
 * local test server) and prove that a redirect into private space is refused by the very same
 * check. It only applies to names (a literal IP host is never rewritten), and the post-connect
 * verification compares against the rewritten addresses.
 */
export interface FetchSeams {
  /** Called right before http(s).request (tests assert it is not reached for refused URLs). */
  onRequest?: (url: URL) => void;
  connectAddress?: (checked: ResolvedAddress) => ResolvedAddress;
}

type Hop = { kind: 'redirect'; location: string } | { kind: 'image'; bytes: Buffer; contentType: string };

function refused(code: FetchRefusedError['code'], message: string, cause?: unknown): FetchRefusedError {
  return new FetchRefusedError(code, message, cause === undefined ? undefined : { cause });
}

/** Parse and check a URL: syntax, scheme, credentials. Addresses are checked later. */
export function checkUrl(raw: string): URL {
  if (typeof raw !== 'string' || raw.length === 0) throw refused('url_invalid', 'the image URL is empty');
  if (raw.length > MAX_URL_LENGTH) {
    throw refused('url_invalid', `the image URL is longer than ${MAX_URL_LENGTH} characters`);
  }
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw refused('url_invalid', 'the image URL is not a valid absolute URL');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw refused('url_scheme', 'only http and https image URLs are allowed');
  }
  if (u.username !== '' || u.password !== '') {
    throw refused('url_credentials', 'image URLs must not contain credentials (user:password@)');
  }
  if (u.hostname === '') throw refused('url_invalid', 'the image URL has no host');
  u.hash = '';
  return u;
}

async function defaultResolve(host: string): Promise<ResolvedAddress[]> {
  const list = await dns.promises.lookup(host, { all: true, verbatim: true });
  return list.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
}

const BLOCKED_NAME_MESSAGE =
  'the image host resolves to an address that is not allowed (private, loopback, link-local or reserved)';
const BLOCKED_LITERAL_MESSAGE =
  'the image URL points to an address that is not allowed (private, loopback, link-local or reserved)';

/** Resolve a name and check every answer; the caller connects only to what this returns. */
async function resolveChecked(hostname: string, policy: FetchPolicy): Promise<ResolvedAddress[]> {
  let answers: unknown;
  try {
    answers = await (policy.resolve ?? defaultResolve)(hostname);
  } catch (e) {
    throw refused('dns_failed', 'the image host name could not be resolved', e);
  }
  if (!Array.isArray(answers) || answers.length === 0) {
    throw refused('dns_failed', 'the image host name could not be resolved');
  }
  const out: ResolvedAddress[] = [];
  for (const a of answers as Array<Partial<ResolvedAddress> | null | undefined>) {
    const address = a?.address;
    const bytes = typeof address === 'string' ? parseIp(address) : null;
    if (typeof address !== 'string' || !bytes) {
      // Fail closed on anything we cannot parse strictly (garbage, zone ids like fe80::1%eth0).
      throw refused('address_blocked', BLOCKED_NAME_MESSAGE);
    }
    if (!policy.allowPrivate && classifyAddress(address).blocked) throw refused('address_blocked', BLOCKED_NAME_MESSAGE);
    out.push({ address, family: bytes.length === 4 ? 4 : 6 });
  }
  return out;
}

function mapNetworkError(e: unknown): FetchRefusedError {
  if (e instanceof FetchRefusedError) return e;
  const code = (e as { code?: unknown })?.code;
  const c = typeof code === 'string' ? code : '';
  if (c === 'ENOTFOUND' || c === 'EAI_AGAIN' || c === 'EAI_FAIL' || c === 'ENODATA') {
    return refused('dns_failed', 'the image host name could not be resolved', e);
  }
  if (c.startsWith('ERR_SSL') || c.startsWith('ERR_TLS') || c.includes('CERT') || c.includes('SIGNATURE') || c === 'EPROTO') {
    return refused('network_error', 'the secure (TLS) connection to the image host failed', e);
  }
  if (c === 'ECONNREFUSED') return refused('network_error', 'the image host refused the connection', e);
  if (c === 'ECONNRESET' || c === 'EPIPE') return refused('network_error', 'the connection to the image host was reset', e);
  if (c === 'EHOSTUNREACH' || c === 'ENETUNREACH') return refused('network_error', 'the image host is unreachable', e);
  if (c.startsWith('HPE_')) return refused('network_error', 'the image host sent an invalid HTTP response', e);
  return refused('network_error', 'the image could not be fetched (network error)', e);
}

const TOKEN = /^[a-z0-9!#$&^_.+-]{1,64}\/[a-z0-9!#$&^_.+-]{1,64}$/;

/** "Image/PNG; charset=x" → "image/png"; null when absent or malformed. */
function mediaType(header: string | undefined): string | null {
  if (header === undefined) return null;
  const t = header.split(';')[0]!.trim().toLowerCase();
  return TOKEN.test(t) ? t : null;
}

function fetchHop(u: URL, policy: FetchPolicy, seams: FetchSeams, deadline: AbortSignal): Promise<Hop> {
  const timeoutError = () =>
    refused('timeout', `the image could not be fetched within ${policy.totalTimeoutMs} ms`);
  if (deadline.aborted) return Promise.reject(timeoutError());

  const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  // Keys of the addresses this hop may connect to (filled by the literal check or the lookup).
  const approved = new Set<string>();
  if (net.isIP(host) !== 0) {
    const key = addressKey(host);
    if (key === null || (!policy.allowPrivate && classifyAddress(host).blocked)) {
      return Promise.reject(refused('address_blocked', BLOCKED_LITERAL_MESSAGE));
    }
    approved.add(key);
  }

  const lookup: net.LookupFunction = (hostname, options, callback) => {
    resolveChecked(hostname, policy).then(
      (checked) => {
        let usable = seams.connectAddress ? checked.map(seams.connectAddress) : checked;
        const fam = options.family === 4 || options.family === 'IPv4' ? 4 : options.family === 6 || options.family === 'IPv6' ? 6 : 0;
        if (fam !== 0) usable = usable.filter((a) => a.family === fam);
        const first = usable[0];
        if (!first) {
          callback(refused('dns_failed', 'the image host name could not be resolved'), '', 0);
          return;
        }
        for (const a of usable) approved.add(addressKey(a.address)!);
        if (options.all) callback(null, usable.map((a) => ({ address: a.address, family: a.family })));
        else callback(null, first.address, first.family);
      },
      (err: unknown) => callback(err as NodeJS.ErrnoException, '', 0),
    );
  };

  return new Promise<Hop>((resolve, reject) => {
    let settled = false;
    let req: http.ClientRequest | undefined;
    let res: http.IncomingMessage | undefined;

    const connectTimer = setTimeout(
      () => fail(refused('connect_timeout', `could not connect to the image host within ${policy.connectTimeoutMs} ms`)),
      policy.connectTimeoutMs,
    );
    const onDeadline = () => fail(timeoutError());
    deadline.addEventListener('abort', onDeadline, { once: true });

    function cleanup() {
      clearTimeout(connectTimer);
      deadline.removeEventListener('abort', onDeadline);
    }
    function fail(err: FetchRefusedError) {
      if (settled) return;
      settled = true;
      cleanup();
      res?.destroy();
      req?.destroy();
      reject(err);
    }
    function succeed(hop: Hop) {
      if (settled) return;
      settled = true;
      cleanup();
      resolve(hop);
    }

    const options: https.RequestOptions = {
      protocol: u.protocol,
      hostname: host,
      port: u.port === '' ? undefined : Number(u.port),
      path: `${u.pathname}${u.search}`,
      method: 'GET',
      headers: { 'User-Agent': USER_AGENT, Accept: 'image/*', 'Accept-Encoding': 'identity' },
      agent: false, // a fresh socket per hop: never reuse a connection checked for another URL
      lookup,
    };
    try {
      seams.onRequest?.(u);
      req = (u.protocol === 'https:' ? https : http).request(options);
    } catch (e) {
      fail(refused('url_invalid', 'the image URL could not be requested', e));
      return;
    }

    req.on('error', (e) => fail(mapNetworkError(e)));
    req.on('socket', (socket) => {
      socket.once('connect', () => {
        clearTimeout(connectTimer);
        const key = socket.remoteAddress === undefined ? null : addressKey(socket.remoteAddress);
        if (key === null || !approved.has(key)) fail(refused('address_blocked', BLOCKED_NAME_MESSAGE));
      });
    });
    req.on('response', (r) => {
      res = r;
      r.on('error', (e) => fail(mapNetworkError(e)));
      const status = r.statusCode ?? 0;
      if (REDIRECT_STATUSES.has(status)) {
        const location = r.headers.location;
        if (location === undefined || location === '') {
          fail(refused('bad_redirect', `the image host answered HTTP ${status} without a Location`));
          return;
        }
        succeed({ kind: 'redirect', location });
        r.destroy();
        req?.destroy();
        return;
      }
      // Only 200 (and 203 from a transforming proxy) carry a whole image: 204/205 have no body,
      // 206 would be a fragment (we never send Range), and everything non-2xx is an error.
      if (status !== 200 && status !== 203) {
        fail(refused('bad_status', `the image host answered HTTP ${status}`));
        return;
      }
      const contentType = mediaType(r.headers['content-type']);
      if (contentType === null || !contentType.startsWith('image/') || contentType === 'image/svg+xml') {
        const shown = contentType ?? (r.headers['content-type'] === undefined ? 'missing' : 'invalid');
        fail(refused('bad_content_type', `the URL did not return a supported image (Content-Type: ${shown})`));
        return;
      }
      const encoding = r.headers['content-encoding'];
      if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
        fail(refused('bad_content_encoding', 'the image host sent a compressed (Content-Encoding) response'));
        return;
      }
      const tooLarge = () => refused('too_large', `the image is larger than ${policy.maxBytes} bytes`);
      const declared = r.headers['content-length'];
      if (declared !== undefined && Number(declared) > policy.maxBytes) {
        fail(tooLarge());
        return;
      }
      const chunks: Buffer[] = [];
      let total = 0;
      r.on('data', (chunk: Buffer) => {
        if (settled) return;
        total += chunk.length;
        if (total > policy.maxBytes) {
          fail(tooLarge());
          return;
        }
        chunks.push(chunk);
      });
      r.on('end', () => {
        if (!r.complete) {
          fail(refused('network_error', 'the connection closed before the image was complete'));
        } else if (total === 0) {
          fail(refused('empty_body', 'the image host sent an empty body'));
        } else {
          succeed({ kind: 'image', bytes: Buffer.concat(chunks, total), contentType });
        }
      });
      r.on('close', () => fail(refused('network_error', 'the connection closed before the image was complete')));
    });
    req.end();
  });
}

/**
 * fetchImage with test seams. The service uses fetchImage (index.ts); only tests call this
 * directly. See FetchSeams.
 */
export async function fetchImageWithSeams(url: string, policy: FetchPolicy, seams: FetchSeams = {}): Promise<FetchedImage> {
  validatePolicy(policy);
  let current = checkUrl(url);
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), policy.totalTimeoutMs);
  try {
    for (let redirects = 0; ; redirects++) {
      const hop = await fetchHop(current, policy, seams, deadline.signal);
      if (hop.kind === 'image') return { bytes: hop.bytes, contentType: hop.contentType, finalUrl: current.href };
      if (redirects >= policy.maxRedirects) {
        throw refused('too_many_redirects', `the image URL redirected more than ${policy.maxRedirects} times`);
      }
      let next: string;
      try {
        next = new URL(hop.location, current).href;
      } catch {
        throw refused('url_invalid', 'the image host redirected to an invalid URL');
      }
      current = checkUrl(next); // the new URL is checked from scratch (scheme, credentials, addresses)
    }
  } finally {
    clearTimeout(timer);
  }
}

/** Fetch a user-supplied image URL under `policy`; refusals throw FetchRefusedError. */
export async function fetchImage(url: string, policy: FetchPolicy): Promise<FetchedImage> {
  return fetchImageWithSeams(url, policy);
}
