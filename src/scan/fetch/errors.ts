// Errors of the SSRF-safe image fetcher.
//
// `code` is stable (clients and tests match on it); `message` is written for the client and
// never names an address the fetcher resolved or connected to (only what the URL itself said).
// `cause`, when present, is the underlying Node error: it may name internal addresses and
// ports, so log it server-side but never put it in a response.

export type FetchErrorCode =
  | 'url_invalid' // not a parseable absolute URL (or longer than MAX_URL_LENGTH)
  | 'url_scheme' // anything but http: / https:
  | 'url_credentials' // user:pass@ (or user@) in the URL
  | 'address_blocked' // a literal or resolved address is private/loopback/reserved/...
  | 'dns_failed' // the name did not resolve (or resolved to nothing usable)
  | 'too_many_redirects' // more than policy.maxRedirects redirects
  | 'bad_redirect' // a 3xx without a Location header
  | 'connect_timeout' // name resolution + TCP connect took longer than connectTimeoutMs
  | 'timeout' // the whole fetch (all hops, headers and body) took longer than totalTimeoutMs
  | 'too_large' // Content-Length or the streamed body is over maxBytes
  | 'bad_status' // the final response was not 2xx
  | 'bad_content_type' // the final response is not image/* (or is image/svg+xml)
  | 'bad_content_encoding' // the response is compressed although we asked for identity
  | 'empty_body' // a 2xx image response with zero bytes
  | 'network_error'; // connection refused/reset, TLS failure, truncated body, ...

export class FetchRefusedError extends Error {
  readonly code: FetchErrorCode;

  constructor(code: FetchErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'FetchRefusedError';
    this.code = code;
  }
}

export function isFetchRefusedError(e: unknown): e is FetchRefusedError {
  return e instanceof FetchRefusedError;
}
