// Reading a request body on a listener beside the public port (node:http: the admin listener), with
// the house's body-read failures (src/errors/body.ts) as on the public port: past `limit` bytes it
// rejects with BodyTooLargeError (the rest is read and dropped, so the answer still reaches a client
// that uploads first), and a stream error rejects as it is.
import type http from 'node:http';
import { BodyTooLargeError } from '../errors';

export function readSideBody(req: http.IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) reject(new BodyTooLargeError(limit));
      else chunks.push(c);
    });
    req.on('error', reject);
    req.on('end', () => resolve(Buffer.concat(chunks)));
  });
}
