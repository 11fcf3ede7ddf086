// One HTTP request to a user-supplied URL that can only reach allowed addresses (behaviour
// modelled on go-camo/imgproxy). The image fetcher (fetcher.ts) and webhook delivery use it.
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
//  - No socket is reused (agent: false): each request resolves and connects anew.
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { FetchRefusedError } from './errors';
import { addressKey, classifyAddress, parseIp } from './ip';
import type { FetchPolicy, ResolvedAddress } from './policy';

/** How messages name the URL and its host: `{ url: 'image URL', host: 'image host' }`. */
export interface UrlWords {
  url: string;
  host: string;
}

export const IMAGE_WORDS: UrlWords = { url: 'image URL', host: 'image host' };

/** URLs longer than this are refused as url_invalid. */
export const MAX_URL_LENGTH = 4096;

/**
 * TEST SEAM — never used by the service.
 *
 * `connectAddress` rewrites an address AFTER it passed the block list, just before the socket
 * connects to it: it simulates a network in which a name that resolves to a public address is
 * reachable at 127.0.0.1. That lets tests run the real check with allowPrivate=false (the resolver
 * says `photos.test` is 93.184.216.34, the socket really goes to the local test server) and prove
 * that a redirect into private space is refused by the very same check. It only applies to names
 * (a literal IP host is never rewritten), and the post-connect verification compares against the
 * rewritten addresses.
 */
export interface FetchSeams {
  /** Called right before http(s).request (tests assert it is not reached for refused URLs). */
  onRequest?: (url: URL) => void;
  connectAddress?: (checked: ResolvedAddress) => ResolvedAddress;
}

export function refused(code: FetchRefusedError['code'], message: string, cause?: unknown): FetchRefusedError {
  return new FetchRefusedError(code, message, cause === undefined ? undefined : { cause });
}

/** Parse and check a URL: syntax, scheme, credentials. Addresses are checked when connecting. */
export function checkUrl(raw: string, words: UrlWords = IMAGE_WORDS): URL {
  if (typeof raw !== 'string' || raw.length === 0) throw refused('url_invalid', `the ${words.url} is empty`);
  if (raw.length > MAX_URL_LENGTH) throw refused('url_invalid', `the ${words.url} is longer than ${MAX_URL_LENGTH} characters`);
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw refused('url_invalid', `the ${words.url} is not a valid absolute URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw refused('url_scheme', `only http and https ${words.url}s are allowed`);
  if (u.username !== '' || u.password !== '') {
    throw refused('url_credentials', `${words.url}s must not contain credentials (user:password@)`);
  }
  if (u.hostname === '') throw refused('url_invalid', `the ${words.url} has no host`);
  u.hash = '';
  return u;
}

async function defaultResolve(host: string): Promise<ResolvedAddress[]> {
  const list = await dns.promises.lookup(host, { all: true, verbatim: true });
  return list.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
}

const blockedName = (w: UrlWords) =>
  `the ${w.host} resolves to an address that is not allowed (private, loopback, link-local or reserved)`;
const blockedLiteral = (w: UrlWords) =>
  `the ${w.url} points to an address that is not allowed (private, loopback, link-local or reserved)`;

/** The host of a URL without IPv6 brackets. */
function bareHost(u: URL): string {
  return u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
}

/** Resolve a name and check every answer; the caller connects only to what this returns. */
async function resolveChecked(hostname: string, policy: FetchPolicy, words: UrlWords): Promise<ResolvedAddress[]> {
  const unresolved = `the ${words.host} name could not be resolved`;
  let answers: unknown;
  try {
    answers = await (policy.resolve ?? defaultResolve)(hostname);
  } catch (e) {
    throw refused('dns_failed', unresolved, e);
  }
  if (!Array.isArray(answers) || answers.length === 0) throw refused('dns_failed', unresolved);
  const out: ResolvedAddress[] = [];
  for (const a of answers as Array<Partial<ResolvedAddress> | null | undefined>) {
    const address = a?.address;
    const bytes = typeof address === 'string' ? parseIp(address) : null;
    // Fail closed on anything we cannot parse strictly (garbage, zone ids like fe80::1%eth0).
    if (typeof address !== 'string' || !bytes) throw refused('address_blocked', blockedName(words));
    if (!policy.allowPrivate && classifyAddress(address).blocked) throw refused('address_blocked', blockedName(words));
    out.push({ address, family: bytes.length === 4 ? 4 : 6 });
  }
  return out;
}

/**
 * The address check alone, as the request would make it (a literal, or every answer of the
 * resolver); throws FetchRefusedError. For checking a URL when it is given, long before use: the
 * request checks again when it connects.
 */
export async function checkAddresses(u: URL, policy: FetchPolicy, words: UrlWords): Promise<void> {
  const host = bareHost(u);
  if (net.isIP(host) === 0) await resolveChecked(host, policy, words);
  else if (addressKey(host) === null || (!policy.allowPrivate && classifyAddress(host).blocked)) {
    throw refused('address_blocked', blockedLiteral(words));
  }
}

export function mapNetworkError(e: unknown, words: UrlWords): FetchRefusedError {
  if (e instanceof FetchRefusedError) return e;
  const code = (e as { code?: unknown })?.code;
  const c = typeof code === 'string' ? code : '';
  const host = words.host;
  if (c === 'ENOTFOUND' || c === 'EAI_AGAIN' || c === 'EAI_FAIL' || c === 'ENODATA') return refused('dns_failed', `the ${host} name could not be resolved`, e);
  if (c.startsWith('ERR_SSL') || c.startsWith('ERR_TLS') || c.includes('CERT') || c.includes('SIGNATURE') || c === 'EPROTO') {
    return refused('network_error', `the secure (TLS) connection to the ${host} failed`, e);
  }
  if (c === 'ECONNREFUSED') return refused('network_error', `the ${host} refused the connection`, e);
  if (c === 'ECONNRESET' || c === 'EPIPE') return refused('network_error', `the connection to the ${host} was reset`, e);
  if (c === 'EHOSTUNREACH' || c === 'ENETUNREACH') return refused('network_error', `the ${host} is unreachable`, e);
  if (c.startsWith('HPE_')) return refused('network_error', `the ${host} sent an invalid HTTP response`, e);
  return refused('network_error', `the request to the ${host} failed (network error)`, e);
}

export interface GuardedRequestOptions {
  method: 'GET' | 'POST';
  headers: http.OutgoingHttpHeaders;
  body?: Buffer;
  words: UrlWords;
  /** Aborting it fails the request with `timeoutError()`. */
  deadline: AbortSignal;
  timeoutError: () => FetchRefusedError;
  seams?: FetchSeams;
}

/**
 * Sends one request to `u` (whose syntax checkUrl passed) and resolves with the response once its
 * headers arrived; refusals and failures reject with FetchRefusedError. The caller reads (or
 * destroys) the response, and watches the deadline from then on.
 */
export function guardedRequest(u: URL, policy: FetchPolicy, opts: GuardedRequestOptions): Promise<http.IncomingMessage> {
  const { words, deadline, seams = {} } = opts;
  if (deadline.aborted) return Promise.reject(opts.timeoutError());
  const host = bareHost(u);
  // Keys of the addresses this request may connect to (filled by the literal check or the lookup).
  const approved = new Set<string>();
  if (net.isIP(host) !== 0) {
    const key = addressKey(host);
    if (key === null || (!policy.allowPrivate && classifyAddress(host).blocked)) return Promise.reject(refused('address_blocked', blockedLiteral(words)));
    approved.add(key);
  }

  const lookup: net.LookupFunction = (hostname, options, callback) => {
    resolveChecked(hostname, policy, words).then(
      (checked) => {
        let usable = seams.connectAddress ? checked.map(seams.connectAddress) : checked;
        const fam = options.family === 4 || options.family === 'IPv4' ? 4 : options.family === 6 || options.family === 'IPv6' ? 6 : 0;
        if (fam !== 0) usable = usable.filter((a) => a.family === fam);
        const first = usable[0];
        if (!first) {
          callback(refused('dns_failed', `the ${words.host} name could not be resolved`), '', 0);
          return;
        }
        for (const a of usable) approved.add(addressKey(a.address)!);
        if (options.all) callback(null, usable.map((a) => ({ address: a.address, family: a.family })));
        else callback(null, first.address, first.family);
      },
      (err: unknown) => callback(err as NodeJS.ErrnoException, '', 0),
    );
  };

  return new Promise((resolve, reject) => {
    let settled = false;
    let req: http.ClientRequest | undefined;
    const connectTimer = setTimeout(
      () => fail(refused('connect_timeout', `could not connect to the ${words.host} within ${policy.connectTimeoutMs} ms`)),
      policy.connectTimeoutMs,
    );
    const onDeadline = () => fail(opts.timeoutError());
    deadline.addEventListener('abort', onDeadline, { once: true });
    const cleanup = () => {
      clearTimeout(connectTimer);
      deadline.removeEventListener('abort', onDeadline);
    };
    function fail(err: FetchRefusedError) {
      if (settled) return;
      settled = true;
      cleanup();
      req?.destroy();
      reject(err);
    }

    try {
      seams.onRequest?.(u);
      req = (u.protocol === 'https:' ? https : http).request({
        protocol: u.protocol,
        hostname: host,
        port: u.port === '' ? undefined : Number(u.port),
        path: `${u.pathname}${u.search}`,
        method: opts.method,
        headers: opts.body ? { ...opts.headers, 'Content-Length': opts.body.length } : opts.headers,
        agent: false, // a fresh socket per request: never reuse a connection checked for another URL
        lookup,
      });
    } catch (e) {
      fail(refused('url_invalid', `the ${words.url} could not be requested`, e));
      return;
    }
    req.on('error', (e) => fail(mapNetworkError(e, words)));
    req.on('socket', (socket) => {
      socket.once('connect', () => {
        clearTimeout(connectTimer);
        const key = socket.remoteAddress === undefined ? null : addressKey(socket.remoteAddress);
        if (key === null || !approved.has(key)) fail(refused('address_blocked', blockedName(words)));
      });
    });
    req.on('response', (response) => {
      if (settled) {
        response.destroy();
        return;
      }
      settled = true;
      cleanup();
      resolve(response);
    });
    req.end(opts.body);
  });
}
