// The sha256 of bytes, as lowercase hex: what manifests, probe keys and stamps record.
import { createHash } from 'node:crypto';

export function sha256(data: Buffer | string): string {
  return createHash('sha256').update(data).digest('hex');
}
