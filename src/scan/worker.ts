// Scan workers inside the service: claim a scan (PENDING, or PROCESSING with an expired lease),
// fetch its URL if it has one, run it through the same model and batcher as /v2/predict, and
// store the result. A worker that dies leaves the scan to be claimed again when its lease ends.
import { randomUUID } from 'node:crypto';
import { log } from '../log';
import type { Model } from '../models/registry';
import { metrics } from '../ops/metrics';
import { ImageError } from '../pipeline/analysis';
import { QueueFullError } from '../pipeline/batcher';
import { fetchImage, isFetchRefusedError, type FetchPolicy } from './fetch';
import type { StoredResult } from './present';
import type { ClaimedScan, Store } from './store';

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
    private readonly store: Store,
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
      this.store.scans.purge(new Date(Date.now() - this.options.retentionMs)).then(
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
      const done = () => {
        clearTimeout(timer);
        const index = this.wakeups.indexOf(done);
        if (index >= 0) this.wakeups.splice(index, 1);
        resolve();
      };
      const timer = setTimeout(done, this.options.idlePollMs);
      this.wakeups.push(done);
    });
  }

  private async loop(workerId: string): Promise<void> {
    while (this.running) {
      let claimed: ClaimedScan | null = null;
      try {
        claimed = await this.store.scans.claim(workerId, this.options.leaseMs, this.options.maxAttempts);
      } catch (error) {
        log.error('scan claim failed', { error: String(error) });
      }
      if (!claimed) {
        await this.idle();
        continue;
      }
      // The lease is renewed while the scan is worked on, so a slow fetch or a busy model never
      // hands a live scan to a second worker.
      const scan = claimed;
      const heartbeat = setInterval(() => {
        this.store.scans.extendLease(scan.id, workerId, this.options.leaseMs).catch((error: unknown) => {
          log.warn('scan lease renewal failed', { scan: scan.id, error: String(error) });
        });
      }, Math.max(50, Math.floor(this.options.leaseMs / 3)));
      await this.process(workerId, scan)
        .catch((error: unknown) => {
          // Left PROCESSING: the lease expires and another attempt follows (up to maxAttempts).
          log.error('scan processing failed; it will be retried after its lease', { scan: scan.id, error: String(error) });
        })
        .finally(() => clearInterval(heartbeat));
    }
  }

  /** Scans share the model's queue with /v2: when it is full, wait and retry instead of failing. */
  private async analyzeWhenAdmitted(bytes: Buffer) {
    for (let delayMs = 100; ; delayMs = Math.min(delayMs * 2, 2000)) {
      try {
        return await this.model.analyze({ data: bytes, encoding: 'bytes' });
      } catch (error) {
        if (!(error instanceof QueueFullError) || !this.running) throw error;
        await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
    }
  }

  private async process(workerId: string, scan: ClaimedScan): Promise<void> {
    await this.store.scans.appendLog(scan.id, 'worker', `processed by worker ${workerId} (pid ${process.pid})`);
    let bytes = scan.image;
    if (scan.source === 'url') {
      await this.store.scans.appendLog(scan.id, 'fetching_url', 'fetching the image URL');
      try {
        const fetched = await fetchImage(scan.imageUrl!, this.options.fetchPolicy);
        bytes = fetched.bytes;
        await this.store.scans.appendLog(scan.id, 'fetched', `${fetched.bytes.length} bytes, ${fetched.contentType}`);
      } catch (error) {
        if (!isFetchRefusedError(error)) throw error;
        await this.failed(scan.id, workerId, `fetch_${error.code}`, error.message);
        return;
      }
    }
    try {
      const analysis = await this.analyzeWhenAdmitted(bytes!);
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
      if (await this.store.scans.complete(scan.id, workerId, { ...result })) metrics.scanOutcomes.inc({ outcome: 'completed', code: '' });
    } catch (error) {
      if (!(error instanceof ImageError)) throw error;
      await this.failed(scan.id, workerId, 'invalid_image', error.message);
    }
  }

  private async failed(id: string, workerId: string, code: string, message: string): Promise<void> {
    if (await this.store.scans.fail(id, workerId, { code, message })) metrics.scanOutcomes.inc({ outcome: 'failed', code });
  }
}
