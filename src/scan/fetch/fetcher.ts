// The SSRF-safe fetcher of user-supplied image URLs: every hop is one guardedRequest (its header
// says how addresses are enforced), and every redirect target is checked from scratch.
import { FetchRefusedError } from './errors';
import { checkUrl, guardedRequest, IMAGE_WORDS, mapNetworkError, refused, type FetchSeams } from './guarded-request';
import { validatePolicy, type FetchPolicy } from './policy';

export type { FetchSeams } from './guarded-request';
export const USER_AGENT = 'CatComfort-Fetcher/1.0';
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

export interface FetchedImage {
  bytes: Buffer;
  /** The bare media type, lower-cased, parameters dropped (e.g. "image/png"). */
  contentType: string;
  /** The URL the image finally came from (after redirects, without fragment). */
  finalUrl: string;
}

type Hop = { kind: 'redirect'; location: string } | { kind: 'image'; bytes: Buffer; contentType: string };

const TOKEN = /^[a-z0-9!#$&^_.+-]{1,64}\/[a-z0-9!#$&^_.+-]{1,64}$/;

/** "Image/PNG; charset=x" → "image/png"; null when absent or malformed. */
function mediaType(header: string | undefined): string | null {
  if (header === undefined) return null;
  const t = header.split(';')[0]!.trim().toLowerCase();
  return TOKEN.test(t) ? t : null;
}

async function fetchHop(u: URL, policy: FetchPolicy, seams: FetchSeams, deadline: AbortSignal): Promise<Hop> {
  const timeoutError = () => refused('timeout', `the image could not be fetched within ${policy.totalTimeoutMs} ms`);
  const r = await guardedRequest(u, policy, {
    method: 'GET',
    headers: { 'User-Agent': USER_AGENT, Accept: 'image/*', 'Accept-Encoding': 'identity' },
    words: IMAGE_WORDS,
    deadline,
    timeoutError,
    seams,
  });
  return new Promise<Hop>((resolve, reject) => {
    let settled = false;
    const onDeadline = () => fail(timeoutError());
    deadline.addEventListener('abort', onDeadline, { once: true });
    if (deadline.aborted) onDeadline();
    function fail(err: FetchRefusedError) {
      if (settled) return;
      settled = true;
      deadline.removeEventListener('abort', onDeadline);
      r.destroy();
      reject(err);
    }
    function succeed(hop: Hop) {
      if (settled) return;
      settled = true;
      deadline.removeEventListener('abort', onDeadline);
      resolve(hop);
    }
    r.on('error', (e) => fail(mapNetworkError(e, IMAGE_WORDS)));
    const status = r.statusCode ?? 0;
    if (REDIRECT_STATUSES.has(status)) {
      const location = r.headers.location;
      if (location === undefined || location === '') {
        fail(refused('bad_redirect', `the image host answered HTTP ${status} without a Location`));
        return;
      }
      succeed({ kind: 'redirect', location });
      r.destroy();
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
      if (!r.complete) fail(refused('network_error', 'the connection closed before the image was complete'));
      else if (total === 0) fail(refused('empty_body', 'the image host sent an empty body'));
      else succeed({ kind: 'image', bytes: Buffer.concat(chunks, total), contentType });
    });
    r.on('close', () => fail(refused('network_error', 'the connection closed before the image was complete')));
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
