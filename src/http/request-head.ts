// A request head as the front hands it to the service: its method, path, query, field lines (names in
// lower case, values without surrounding blanks) and the client's address, packed into one string by
// the front, which parsed the head (front/head.ts), and split here on the service's side. One string
// is the cheapest thing to post between threads; splitting it is the service's only reading of a head.

/** Separates the parts of a packed head: a field value, a path or a query cannot hold it. */
const SEPARATOR = '\0';

/** What the service reads of a request's head. */
export interface ServiceHead {
  /** As the client sent it (one of the standard methods, upper case). */
  method: string;
  /** The target up to `?`. */
  path: string;
  /** The target after `?`; '' when none. */
  query: string;
  /** The client's address, as the front judged it (trusted proxies' forwarding fields included). */
  peer: string;
  /** Each field's name and value in turn, in the order sent. */
  fields: readonly string[];
}

/** `fields`: names (lower case) and values in turn. */
export function packHead(method: string, target: string, fields: readonly string[], peer: string): string {
  const mark = target.indexOf('?');
  const path = mark === -1 ? target : target.slice(0, mark);
  const query = mark === -1 ? '' : target.slice(mark + 1);
  return [method, path, query, peer, ...fields].join(SEPARATOR);
}

export function unpackHead(packed: string): ServiceHead {
  const parts = packed.split(SEPARATOR);
  return { method: parts[0]!, path: parts[1]!, query: parts[2]!, peer: parts[3]!, fields: parts.slice(4) };
}

/** The value of the last `name` field (lower case) in `fields` (names and values in turn), as the service's header map holds it. */
export function lastField(fields: readonly string[], name: string): string | undefined {
  for (let i = fields.length - 2; i >= 0; i -= 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}
