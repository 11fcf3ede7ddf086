// Callback URLs: what may be given (https; http too where private addresses are allowed, as for
// image URLs), the address check made when one is given (the request checks again when it
// connects, since DNS can change), and how one is shown in logs (without its query).
import { checkAddresses, checkUrl, FetchRefusedError, type FetchPolicy, type UrlWords } from '../fetch';

export const CALLBACK_WORDS: UrlWords = { url: 'callback URL', host: 'callback host' };

/**
 * Checks a callback URL: syntax, scheme, credentials, then every address it resolves to, within
 * policy.connectTimeoutMs. Returns it without its fragment; throws FetchRefusedError.
 */
export async function checkCallbackUrl(raw: string, policy: FetchPolicy): Promise<string> {
  const u = checkUrl(raw, CALLBACK_WORDS);
  if (u.protocol !== 'https:' && !policy.allowPrivate) {
    throw new FetchRefusedError('url_scheme', 'callback URLs must use https (http only where private addresses are allowed)');
  }
  let timer: NodeJS.Timeout | undefined;
  const slow = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new FetchRefusedError('dns_failed', `the callback host name could not be resolved within ${policy.connectTimeoutMs} ms`)),
      policy.connectTimeoutMs,
    );
  });
  try {
    await Promise.race([checkAddresses(u, policy, CALLBACK_WORDS), slow]);
  } finally {
    clearTimeout(timer);
  }
  return u.href;
}

/** The URL without its query (which may carry a receiver's token): `https://host/path?…`. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}${u.search === '' ? '' : '?…'}`;
  } catch {
    return '(invalid URL)';
  }
}
