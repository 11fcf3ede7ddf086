// Image bytes in the main thread's own memory, freed by the addon as soon as nothing reads them
// (memory/lent-bytes.ts lendOwnMemory) rather than at the main thread's next full V8 collection.
import { lendOwnMemory, type LentRange } from '../memory/lent-bytes';
import { loadAddon } from './addon';

/**
 * Lends `bytes`' buffer when they are the whole of it (a scan's image: the store's copy, a fetch's,
 * the base64 decoder's), so the caller and the analyses reading it hold it; null otherwise (left to V8).
 */
export function freeWhenRead(bytes: Uint8Array): LentRange | null {
  const buffer = bytes.buffer;
  if (!(buffer instanceof ArrayBuffer) || bytes.byteOffset !== 0 || bytes.byteLength !== buffer.byteLength) return null;
  return lendOwnMemory(buffer, release);
}

/**
 * Lends the buffer that `parts` of one message lie in (a gRPC ModelInfer's raw_input_contents, slices
 * of the message grpc-js assembled), when it holds little besides them (at most `otherBytes`): a
 * buffer that large holds this message alone. Null otherwise (left to V8).
 */
export function freeMessageWhenRead(parts: Uint8Array[], otherBytes: number): LentRange | null {
  const buffer = parts[0]?.buffer;
  if (!(buffer instanceof ArrayBuffer) || parts.some((part) => part.buffer !== buffer)) return null;
  const partBytes = parts.reduce((n, part) => n + part.byteLength, 0);
  if (buffer.byteLength > partBytes + otherBytes) return null;
  return lendOwnMemory(buffer, release);
}

function release(buffer: ArrayBuffer): void {
  loadAddon().releaseArrayBuffer(buffer);
}
