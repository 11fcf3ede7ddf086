// Scan workers inside the service: claim a scan (PENDING, or PROCESSING with an expired lease),
// fetch its URL if it has one, run it through the same model and batcher as /v2/predict, and
// store the result. A worker that dies leaves the scan to be claimed again when its lease ends.
import { randomUUID } from 'node:crypto';
import { log } from '../log';
import type { Model } from '../models/registry';
import { ImageError } from '../pipeline/analysis';
import { fetchImage, isFetchRefusedError, type FetchPolicy } from './fetch';
import type { StoredResult } from './present';
import type { ClaimedScan, ScanStore } from './store';

export interface WorkerOptions {
  workers: number;
  leaseMs: number;
  maxAttempts: number;
  idlePollMs: number;
  retentionMs: number;
  fetchPolicy: FetchPolicy;
  serviceVersion: string;
}

export class ScanWorkers {
  private running = false;
  private wakeups: Array<() => void> = [];
  private loops: Array<Promise<void>> = [];
  private purgeTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly store: ScanStore,
    private readonly model: Model,
    private readonly options: WorkerOptions,
  ) {}

  get modelId(): string {
    return this.model.id;
  }

  start(): void {
    this.running = true;
    for (let i = 0; i < this.options.workers; i++) this.loops.push(this.loop(`${process.pid}-${randomUUID().slice(0, 8)}`));
    const purge = () =>
      this.store.purge(new Date(Date.now() - this.options.retentionMs)).then(
        (n) => n > 0 && log.info('purged scans past retention', { count: n }),
        (error: unknown) => log.warn('scan purge failed', { error: String(error) }),
      );
    void purge();
    this.purgeTimer = setInterval(purge, Math.min(this.options.retentionMs, 10 * 60_000));
    this.purgeTimer.unref();
  }

  /** A new scan was stored: wake an idle worker instead of waiting for its next poll. */
  notify(): void {
    this.wakeups.shift()?.();
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.purgeTimer) clearInterval(this.purgeTimer);
    for (const wake of this.wakeups.splice(0)) wake();
    await Promise.all(this.loops);
  }

  private idle(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, this.options.idlePollMs);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wakeups.push(done);
    });
  }

  private async loop(workerId: string): Promise<void> {
    while (this.running) {
      let claimed: ClaimedScan | null = null;
      try {
        claimed = await this.store.claim(workerId, this.options.leaseMs, this.options.maxAttempts);
      } catch (error) {
        log.error('scan claim failed', { error: String(error) });
      }
      if (!claimed) {
        await this.idle();
        continue;
      }
      await this.process(workerId, claimed).catch((error: unknown) => {
        // Left PROCESSING: the lease expires and another attempt follows (up to maxAttempts).
        log.error('scan processing failed; it will be retried after its lease', { scan: claimed!.id, error: String(error) });
      });
    }
  }

  private async process(workerId: string, scan: ClaimedScan): Promise<void> {
    await this.store.appendLog(scan.id, 'worker', `processed by worker ${workerId} (pid ${process.pid})`);
    let bytes = scan.image;
    if (scan.source === 'url') {
      await this.store.appendLog(scan.id, 'fetching_url', 'fetching the image URL');
      try {
        const fetched = await fetchImage(scan.imageUrl!, this.options.fetchPolicy);
        bytes = fetched.bytes;
        await this.store.appendLog(scan.id, 'fetched', `${fetched.bytes.length} bytes, ${fetched.contentType}`);
      } catch (error) {
        if (!isFetchRefusedError(error)) throw error;
        await this.store.fail(scan.id, workerId, { code: `fetch_${error.code}`, message: error.message });
        return;
      }
    }
    try {
      const analysis = await this.model.analyze({ data: bytes!, encoding: 'bytes' });
      const result: StoredResult = {
        detection: analysis.detection,
        width: analysis.width,
        height: analysis.height,
        box: analysis.cat?.box ?? null,
        confidence: analysis.cat?.confidence ?? null,
        score: analysis.score,
        threshold: this.model.manifest.defaultThreshold,
        modelId: this.model.id,
        modelVersion: this.options.serviceVersion,
      };
      await this.store.complete(scan.id, workerId, { ...result });
    } catch (error) {
      if (!(error instanceof ImageError)) throw error;
      await this.store.fail(scan.id, workerId, { code: 'invalid_image', message: error.message });
    }
  }
}
