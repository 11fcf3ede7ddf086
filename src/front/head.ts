// Request heads for the HTTP front (front.ts): parsing and validation of one complete head
// (request line, field lines, empty line) per RFC 9112, and the head as the service gets it
// (http/request-head.ts). Pure functions over strings; no sockets here.
import type { ErrorKind } from '../errors';
import { packHead } from '../http/request-head';

/** Longest request head accepted (request line + fields + CRLFs); past it: 431 (414 for a request line alone). */
export const MAX_HEAD_BYTES = 32 * 1024;
/** Most header fields accepted; past it: 431. */
export const MAX_HEADER_FIELDS = 40;
/** The only methods passed on (RFC 9110 §9, case-sensitive). Others get 405 or 501 from the front. */
export const STANDARD_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE', 'PATCH']);

export interface RequestHead {
  method: string;
  /** The request target as sent, e.g. `/v2/predict?explain=true`. */
  target: string;
  /** The request target without query or fragment, e.g. `/v2/predict`. */
  path: string;
  /** The client's X-Request-ID, for the request id of the front's own v2 errors. */
  requestId: string | undefined;
  /** The declared body length; 0 without Content-Length (and for chunked bodies). */
  contentLength: number;
  chunked: boolean;
  /** `Expect: 100-continue` from an HTTP/1.1 client (HTTP/1.0 clients' expectations are ignored). */
  expectContinue: boolean;
  /** The client speaks HTTP/1.0: its answer has no chunked coding and no interim answers. */
  http10: boolean;
  /** The connection ends after this request's answer: `Connection: close`, or HTTP/1.0 without `keep-alive`. */
  close: boolean;
  /** The `Forwarded` and `X-Forwarded-For` fields (each field's lines joined), for trusted proxies. */
  forwarded: string | undefined;
  xForwardedFor: string | undefined;
  /** Each field's name (lower case) and value (without surrounding blanks) in turn, in the order sent. */
  fields: string[];
}

export interface HeadRefusal {
  kind: ErrorKind;
  message: string;
  /** The request path when it could be read, else `/` (it picks the error format). */
  path: string;
  /** The request method when the request line could be read (access log, route label). */
  method?: string;
  requestId: string | undefined;
}

export type ParsedHead = { ok: true; head: RequestHead } | { ok: false; refusal: HeadRefusal };

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// name ":" OWS value OWS, where the value has no control characters other than HTAB.
const FIELD = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*([^\x00-\x08\x0a-\x1f\x7f]*?)[ \t]*$/;
const TARGET = /^\/[\x21-\x7e]*$/;
const HOST = /^[A-Za-z0-9._~!$&'()*+,;=:[\]%-]*$/;
const VERSION = /^HTTP\/\d\.\d$/;
const DECIMAL = /^\d{1,15}$/;

function pathOf(target: string): string {
  const end = target.search(/[?#]/);
  return end === -1 ? target : target.slice(0, end);
}

/** The path of a request line that may be incomplete (for the format of a 414/431/400). */
export function pathHint(start: string): string {
  const space = start.indexOf(' ');
  if (space === -1) return '/';
  const rest = start.slice(space + 1, space + 1 + 256);
  const target = rest.split(/[ \r\n]/)[0] ?? '';
  return target.startsWith('/') ? pathOf(target) : '/';
}

/** `value` joined to what an earlier field line of the same name gave (RFC 9110 §5.3). */
function joined(earlier: string | undefined, value: string): string {
  return earlier === undefined ? value : `${earlier}, ${value}`;
}

/**
 * Parses one head, `text` being its bytes as latin1 from the request line up to and including the
 * final CRLF CRLF. Checks, in this order: request-line syntax (400), version HTTP/1.1 or HTTP/1.0
 * (505), origin-form target (400), field count (431), field syntax (400, obs-fold included), one
 * valid Host (400; HTTP/1.0 may send none), framing: Content-Length once and decimal, not with
 * Transfer-Encoding, and a Transfer-Encoding that is exactly `chunked` (400; 501 for other codings
 * before `chunked`; 400 for any from HTTP/1.0, RFC 9112 §6.1). The method is not judged here (see
 * STANDARD_METHODS).
 */
export function parseHead(text: string): ParsedHead {
  const lines = text.split('\r\n');
  lines.length -= 2; // the empty line and what follows the final CRLF
  const requestLine = lines[0] ?? '';
  let path = pathHint(requestLine);
  let requestId: string | undefined;
  const parts = requestLine.split(' ');
  const method = TOKEN.test(parts[0] ?? '') ? parts[0] : undefined;
  const refuse = (kind: ErrorKind, message: string): ParsedHead => ({ ok: false, refusal: { kind, message, path, method, requestId } });

  if (parts.length !== 3 || !TOKEN.test(parts[0]!) || !VERSION.test(parts[2]!)) return refuse('bad_request', 'Malformed request line.');
  const [, target, version] = parts as [string, string, string];
  if (version !== 'HTTP/1.1' && version !== 'HTTP/1.0') return refuse('http_version_not_supported', `Only HTTP/1.1 and HTTP/1.0 are supported, not ${version}.`);
  const http10 = version === 'HTTP/1.0';
  if (!TARGET.test(target)) return refuse('bad_request', 'The request target must be a path starting with "/".');
  path = pathOf(target);
  if (lines.length - 1 > MAX_HEADER_FIELDS) return refuse('header_too_large', `More than ${MAX_HEADER_FIELDS} header fields.`);

  let hosts = 0;
  let host = '';
  let lengths = 0;
  let length = '';
  const codings: string[] = [];
  let expect: string | undefined;
  let close = false;
  let keepAlive = false;
  let forwarded: string | undefined;
  let xForwardedFor: string | undefined;
  const fields: string[] = [];
  let malformed = false;
  for (let i = 1; i < lines.length; i++) {
    const match = FIELD.exec(lines[i]!);
    if (!match) {
      malformed = true;
      continue;
    }
    const value = match[2]!;
    const name = match[1]!.toLowerCase();
    fields.push(name, value);
    switch (name) {
      case 'host':
        hosts++;
        host = value;
        break;
      case 'content-length':
        lengths++;
        length = value;
        break;
      case 'transfer-encoding':
        codings.push(...value.split(',').map((c) => c.trim().toLowerCase()));
        break;
      case 'expect':
        expect = value.toLowerCase();
        break;
      case 'connection':
        for (const option of value.split(',')) {
          const token = option.trim().toLowerCase();
          if (token === 'close') close = true;
          else if (token === 'keep-alive') keepAlive = true;
        }
        break;
      case 'forwarded':
        forwarded = joined(forwarded, value);
        break;
      case 'x-forwarded-for':
        xForwardedFor = joined(xForwardedFor, value);
        break;
      case 'x-request-id':
        requestId = value;
        break;
    }
  }
  if (malformed) return refuse('bad_request', 'Malformed header field.');
  if (hosts > 1 || (hosts === 0 && !http10)) return refuse('bad_request', 'Exactly one Host header is required.');
  if (!HOST.test(host)) return refuse('bad_request', 'Invalid Host header.');
  if (lengths > 0 && codings.length > 0) return refuse('bad_request', 'Content-Length and Transfer-Encoding must not be sent together.');
  if (lengths > 1) return refuse('bad_request', 'More than one Content-Length header.');
  if (lengths === 1 && !DECIMAL.test(length)) return refuse('bad_request', 'Invalid Content-Length header.');
  let chunked = false;
  if (codings.length > 0 && http10) return refuse('bad_request', 'HTTP/1.0 requests cannot use Transfer-Encoding.');
  if (codings.length > 0) {
    const chunkedCount = codings.filter((c) => c === 'chunked').length;
    if (codings.at(-1) !== 'chunked' || chunkedCount !== 1 || codings.includes('')) {
      return refuse('bad_request', 'Transfer-Encoding must end with chunked, applied once.');
    }
    if (codings.length > 1) return refuse('not_implemented', 'Only the chunked transfer coding is supported.');
    chunked = true;
  }
  return {
    ok: true,
    head: {
      method: method!,
      target,
      path,
      requestId,
      contentLength: lengths === 1 ? Number(length) : 0,
      chunked,
      expectContinue: expect === '100-continue' && !http10,
      http10,
      close: close || (http10 && !keepAlive),
      forwarded,
      xForwardedFor,
      fields,
    },
  };
}

/** Fields of an HTTP/1.0 head that concern only its connection to the front. */
const HTTP10_DROPPED: ReadonlySet<string> = new Set(['expect', 'connection', 'keep-alive']);
/** Fields of a chunked head whose body the front has read whole (and answered 100 Continue to itself). */
const DECHUNKED_DROPPED: ReadonlySet<string> = new Set(['transfer-encoding', 'expect']);

function without(fields: readonly string[], dropped: ReadonlySet<string>): string[] {
  const kept: string[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) if (!dropped.has(fields[i]!)) kept.push(fields[i]!, fields[i + 1]!);
  return kept;
}

/**
 * The head as the service gets it, packed (http/request-head.ts), from the client at `peer`: an HTTP/1.0
 * head without the fields that concern only its connection, with an empty Host if it had none; a
 * chunked one, its body read whole (`bodyLength` bytes), with Content-Length instead of its coding.
 */
export function serviceHead(head: RequestHead, peer: string, bodyLength: number): string {
  let fields = head.fields;
  if (head.http10) {
    fields = without(fields, HTTP10_DROPPED);
    if (!fields.some((name, i) => i % 2 === 0 && name === 'host')) fields.push('host', '');
  } else if (head.chunked) {
    fields = [...without(fields, DECHUNKED_DROPPED), 'content-length', String(bodyLength)];
  }
  return packHead(head.method, head.target, fields, peer);
}
