// A JSON object body whose image travels as one big base64 string member (v2 predict's `image`),
// read without turning that string into a JavaScript string: the members are walked on the bytes,
// the image's value is cut out as a view of the body (no copy), and the rest of the body is parsed
// with a one-character placeholder in its place. That saves the body's UTF-8 decode, the parse of
// the image and its copy into the addon, and their garbage. When the shape is not the plain one
// (not an object, the member missing, empty or given twice, a backslash escape in it, malformed
// JSON on the way) it answers null and the caller parses the whole body as before, so answers
// do not change; the one difference left, a control character inside the image, is for the caller
// to word as before (hasControlByte). A front thread may have found the member already (the scan is
// the costly part): its span comes noted with the body (noteMemberSpan) and is not searched again;
// a body it found none in is searched here as any other.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** v2 predict's image member, the one a front looks for (front/service-link.ts). */
export const IMAGE_MEMBER = 'image';

/** A stand-in for the member's value while the rest is parsed: a non-empty string, as a schema wants. */
export const PLACEHOLDER = '@';

const isSpace = (b: number | undefined) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

function skipSpace(body: Buffer, i: number): number {
  while (isSpace(body[i])) i++;
  return i;
}

/** The index after the string starting at `i` (a quote), or -1 when it does not end. */
function stringEnd(body: Buffer, i: number): number {
  let j = i + 1;
  for (;;) {
    const quote = body.indexOf(QUOTE, j);
    if (quote < 0) return -1;
    let slashes = 0;
    while (body[quote - 1 - slashes] === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return quote + 1;
    j = quote + 1;
  }
}

/** The index after the JSON value starting at `i` (where its member ends), or -1 when it does not end. */
function valueEnd(body: Buffer, i: number): number {
  let depth = 0;
  while (i < body.length) {
    const b = body[i]!;
    if (b === QUOTE) {
      i = stringEnd(body, i);
      if (i < 0) return -1;
      continue;
    }
    if (depth === 0 && (b === 0x2c || b === 0x7d || b === 0x5d || isSpace(b))) return i;
    if (b === 0x7b || b === 0x5b) depth++;
    else if (b === 0x7d || b === 0x5d) depth--;
    i++;
  }
  return -1;
}

/** Where `key`'s value lies in `body` (its quotes included), or null when the shape is not the plain one (see the file's header). */
export function locateMember(body: Buffer, key: string): [number, number] | null {
  let i = skipSpace(body, 0);
  if (body[i] !== 0x7b) return null;
  i = skipSpace(body, i + 1);
  let found: [number, number] | null = null;
  while (body[i] === QUOTE) {
    const keyEnd = stringEnd(body, i);
    if (keyEnd < 0) return null;
    const name = body.toString('utf8', i + 1, keyEnd - 1);
    i = skipSpace(body, keyEnd);
    if (body[i] !== 0x3a) return null;
    i = skipSpace(body, i + 1);
    const end = valueEnd(body, i);
    if (end < 0) return null;
    if (name === key) {
      // Once only, a string alone, not empty, without escapes.
      if (found || body[i] !== QUOTE || stringEnd(body, i) !== end || end - i < 3) return null;
      const escape = body.indexOf(BACKSLASH, i + 1);
      if (escape >= 0 && escape < end - 1) return null;
      found = [i, end];
    }
    i = skipSpace(body, end);
    if (body[i] !== 0x2c) break;
    i = skipSpace(body, i + 1);
  }
  return found;
}

/** Spans found before the body reached the main thread, by the body's Buffer. */
const noted = new WeakMap<Buffer, { key: string; span: [number, number] }>();

/** `body` has `key`'s value at `span` (locateMember's answer). */
export function noteMemberSpan(body: Buffer, key: string, span: [number, number]): void {
  noted.set(body, { key, span });
}

/** `body`'s members, `key` holding its string's bytes (see the file's header); null: parse it whole. */
export function splitImage(body: Buffer, key: string): Record<string, unknown> | null {
  const note = noted.get(body);
  const found = note && note.key === key ? note.span : locateMember(body, key);
  if (!found) return null;
  const [start, end] = found;
  let members: unknown;
  try {
    members = JSON.parse(`${body.toString('utf8', 0, start)}"${PLACEHOLDER}"${body.toString('utf8', end)}`);
  } catch {
    return null;
  }
  if (typeof members !== 'object' || members === null || Array.isArray(members)) return null;
  return { ...(members as Record<string, unknown>), [key]: body.subarray(start + 1, end - 1) };
}

/** Whether `bytes` hold a control character, which JSON forbids raw inside a string. */
export function hasControlByte(bytes: Buffer): boolean {
  for (const b of bytes) if (b < 0x20) return true;
  return false;
}
