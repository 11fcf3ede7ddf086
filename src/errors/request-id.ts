// Request IDs, the same on every interface: a client's X-Request-ID (HTTP header or gRPC metadata)
// is kept when it is 1-128 characters of [A-Za-z0-9._:-] (safe in headers and logs); anything else
// is replaced by a new UUID.
import { randomUUID } from 'node:crypto';

const acceptable = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestIdFrom(header: string | undefined): string {
  return header !== undefined && acceptable.test(header) ? header : randomUUID();
}
