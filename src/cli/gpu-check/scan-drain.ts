// The scan backlog drain of `catcomfort gpu-check`: N scans of the photos are stored PENDING in an
// embedded SQLite store in a new folder inside the data folder (as POST /scan stores a base64 scan:
// the image bytes in its row), under a credential made for them; then the service is started on
// that folder (http-load.ts) and its own scan workers drain the backlog through the same batches as
// /v2/predict. The store is polled (its queue depth) until every scan is finished or the deadline
// comes. The rate comes from the store's own times: from the first claim to the last scan
// finished, so neither the service's start nor the polling interval is counted. The folder is
// removed afterwards.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { verdictsFile } from '../../packs/probe/verdicts';
import { openStore, sha256Hex, type Store } from '../../store';
import { startService, stopService } from '../http-load';
import type { ScanDrain } from './report';

const POLL_MS = 100;

/** Stores `count` scans of `images` (rotated) in a new store under `dataDir`, has the service drain them, and measures it. */
export async function drainBacklog(images: Buffer[], count: number, dataDir: string, deadline: number): Promise<ScanDrain> {
  mkdirSync(dataDir, { recursive: true });
  const dir = mkdtempSync(path.join(dataDir, 'gpu-check-scans-'));
  // The probe verdict this configuration proved, so that the service started there does not probe again.
  if (existsSync(verdictsFile(dataDir))) copyFileSync(verdictsFile(dataDir), verdictsFile(dir));
  const store = await openStore({ dataDir: dir });
  try {
    const owner = await store.credentials.create('gpu-check scan backlog');
    for (let i = 0; i < count; i++) {
      const image = images[i % images.length]!;
      await store.scans.create({ ownerId: owner.id, source: 'base64', image, imageUrl: null, metadata: {}, idempotencyKey: null, callbackUrl: null, requestHash: sha256Hex(`gpu-check ${i}`) });
    }
    // SQLite whatever the environment says: the backlog is in this folder.
    const service = await startService({ CATCOMFORT_DATA_DIR: dir, CATCOMFORT_DATABASE_URL: '' }, deadline - Date.now());
    try {
      while (Date.now() < deadline) {
        const depth = await store.scans.queueDepth();
        if (depth.pending + depth.processing === 0) break;
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
    } finally {
      await stopService(service);
    }
    return await measured(store, count);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The drain as the store recorded it: first claim, last finish, and the outcomes. */
async function measured(store: Store, scans: number): Promise<ScanDrain> {
  const time = (value: unknown) => (value === null ? NaN : Date.parse(store.db.dialect.iso(value)));
  const [claimed] = await store.db.query<{ at: unknown }>(`SELECT MIN(at) AS at FROM scan_logs WHERE event = 'claimed'`);
  const [done] = await store.db.query<{ last: unknown; completed: number | null; failed: number | null }>(
    `SELECT MAX(completed_at) AS last, SUM(CASE WHEN status = 'COMPLETED' THEN 1 ELSE 0 END) AS completed, SUM(CASE WHEN status = 'FAILED' THEN 1 ELSE 0 END) AS failed FROM scans`,
  );
  const completed = Number(done?.completed ?? 0);
  const failed = Number(done?.failed ?? 0);
  const drainMs = time(done?.last ?? null) - time(claimed?.at ?? null);
  return { scans, completed, failed, drainMs, imagesPerS: drainMs > 0 ? ((completed + failed) * 1000) / drainMs : 0 };
}
