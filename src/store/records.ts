// The rules of the stores' records: time-ordered ids, listing cursors, input checks, and the
// messages of a scan's log.
import { randomBytes, randomInt } from 'node:crypto';
import { InvalidCursorError, type ListQuery, type NewScan } from './types';

// Last timestamp and counter of newId(): ids made by one process sort in creation order.
let lastMs = 0;
let seq = 0;

/**
 * UUID version 7: 48-bit millisecond timestamp, a 12-bit counter (random start each millisecond,
 * so ids from one process are strictly increasing), then 62 random bits.
 */
export function newId(now: number = Date.now()): string {
  if (now > lastMs) {
    lastMs = now;
    seq = randomInt(0, 0x800);
  } else if (seq < 0xfff) {
    seq += 1;
  } else {
    lastMs += 1;
    seq = randomInt(0, 0x800);
  }
  const bytes = randomBytes(16);
  bytes.writeUIntBE(lastMs, 0, 6);
  bytes[6] = 0x70 | (seq >> 8);
  bytes[7] = seq & 0xff;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Lower-case uuid, or null when `value` is not one (such ids can match nothing). */
export function normalizeId(value: string): string | null {
  return UUID.test(value) ? value.toLowerCase() : null;
}

// Cursor: base64url of JSON [createdAt ISO with ms, id] of the last item of the page. Opaque to
// clients; the keyset (createdAt, id) makes pages stable while new scans arrive.
export function encodeCursor(createdAt: string, id: string): string {
  return Buffer.from(JSON.stringify([createdAt, id]), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): { createdAt: string; createdAtMs: number; id: string } {
  if (cursor.length === 0 || cursor.length > 200 || !/^[A-Za-z0-9_-]+$/.test(cursor)) throw new InvalidCursorError();
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidCursorError();
  }
  if (!Array.isArray(parsed) || parsed.length !== 2) throw new InvalidCursorError();
  const [createdAt, id] = parsed as unknown[];
  if (typeof createdAt !== 'string' || typeof id !== 'string') throw new InvalidCursorError();
  const ms = Date.parse(createdAt);
  const normalized = normalizeId(id);
  if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(createdAt) || Number.isNaN(ms) || normalized === null) {
    throw new InvalidCursorError();
  }
  return { createdAt, createdAtMs: ms, id: normalized };
}

export function checkListQuery(q: ListQuery): void {
  if (!Number.isInteger(q.limit) || q.limit < 1 || q.limit > 100) {
    throw new RangeError(`limit must be an integer from 1 to 100, got ${q.limit}`);
  }
}

/** Indexed copies of metadata.petId / metadata.customerId (strings only). */
export function indexedMetadata(metadata: Record<string, unknown>): { petId: string | null; customerId: string | null } {
  const petId = metadata.petId;
  const customerId = metadata.customerId;
  return {
    petId: typeof petId === 'string' ? petId : null,
    customerId: typeof customerId === 'string' ? customerId : null,
  };
}

export function checkNewScan(scan: NewScan): void {
  if (scan.ownerId === '') throw new TypeError('ownerId is required');
  if (scan.source === 'base64' && scan.image === null) throw new TypeError('a base64 scan needs image bytes');
  if (scan.source === 'url' && scan.imageUrl === null) throw new TypeError('a url scan needs imageUrl');
}

export function checkName(name: string): string {
  const trimmed = name.trim();
  if (trimmed === '' || trimmed.length > 200) throw new TypeError('name must be 1-200 characters');
  return trimmed;
}

export function checkLease(leaseMs: number, maxAttempts: number): void {
  if (!Number.isInteger(leaseMs) || leaseMs < 1) throw new RangeError('leaseMs must be a positive integer');
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw new RangeError('maxAttempts must be a positive integer');
}

export const submittedMessage = (source: string): string => `Scan accepted (image from ${source}).`;
export const claimedMessage = (attempt: number): string => `Processing started (attempt ${attempt}).`;
export const requeuedMessage = (attempt: number): string =>
  `Attempt ${attempt} did not finish before its lease expired; the scan is processed again.`;
export const exhaustedMessage = (attempts: number): string => `Processing did not finish after ${attempts} attempts.`;
export const PROCESSING_FAILED = 'processing_failed';
