// Scan workers inside the service: claim a scan (PENDING, or PROCESSING with an expired lease),
// fetch its URL if it has one, run it through the version of the scan model that routing picks
// (packs/routed.ts, as /v2/predict does: one draw per scan, so a canary answers its share of scans
// and a shadow runs beside its share) on that version's batcher, and store the result with the
// version that answered. A worker that dies leaves the scan to be claimed again when its lease ends.
// While the store fails, workers back off (exponential, capped, with jitter) and say nothing per
// attempt: StoreHealth logs the outage once and its end once.
import { randomUUID } from 'node:crypto';
import type { ScanConfig } from '../config';
import { log } from '../log';
import { freeWhenRead } from '../native/own-memory';
import type { ModelRegistry } from '../packs/registry';
import { analyzePicked, appliedThreshold, pickVersion, type Routed } from '../packs/routed';
import type { Pick as PickedVersion } from '../packs/versions';
import { metrics } from '../ops/metrics';
import { ImageError } from '../pipeline/analysis';
import { QueueFullError } from '../pipeline/batcher';
import { backoffMs } from './backoff';
import { fetchImage, isFetchRefusedError, type FetchPolicy } from './fetch';
import type { StoredResult } from './present';
import { StoreUnavailableError, type ClaimedScan, type Store } from '../store';
import type { StoreHealth } from './store-health';
import type { WebhookDispatcher } from './webhooks/dispatcher';

/** The scan settings the workers use (config's ScanConfig), and their parts. */
export interface WorkerOptions extends Pick<ScanConfig, 'leaseMs' | 'maxAttempts' | 'retentionMs'> {
  workers: number;
  idlePollMs: number;
  fetchPolicy: FetchPolicy;
  serviceVersion: string;
}

export class ScanWorkers {
  private running = false;
  /** Workers waiting: idle ones (woken by a new scan) and those backing off from a store failure. */
  private readonly waiters = new Set<{ byNewScan: boolean; wake: () => void }>();
  private loops: Array<Promise<void>> = [];
  /** An idle worker waits on the poll timer. */
  private polling = false;
  private purgeTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly store: Store,
    private readonly health: StoreHealth,
    private readonly registry: ModelRegistry,
    /** The scan model's pack id: each scan's version is drawn from its versions when it is analysed. */
    readonly modelId: string,
    private readonly webhooks: WebhookDispatcher,
    private readonly options: WorkerOptions,
  ) {}

  start(): void {
    this.running = true;
    for (let i = 0; i < this.options.workers; i++) this.loops.push(this.loop(`${process.pid}-${randomUUID().slice(0, 8)}`));
    const purge = () =>
      this.health.track('purge', () => this.store.scans.purge(new Date(Date.now() - this.options.retentionMs))).then(
        (n) => n > 0 && log.info('purged scans past retention', { count: n }),
        (error: unknown) => error instanceof StoreUnavailableError || log.warn('scan purge failed', { error: String(error) }),
      );
    void purge();
    this.purgeTimer = setInterval(purge, Math.min(this.options.retentionMs, 10 * 60_000));
    this.purgeTimer.unref();
  }

  /** A new scan was stored: wake an idle worker instead of waiting for its next poll. */
  notify(): void {
    [...this.waiters].find((w) => w.byNewScan)?.wake();
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.purgeTimer) clearInterval(this.purgeTimer);
    for (const waiter of [...this.waiters]) waiter.wake();
    await Promise.all(this.loops);
  }

  /** Waits `ms` (null: until woken), cut short by stop() and, when `byNewScan` (an idle worker), by a new scan stored. */
  private wait(ms: number | null, byNewScan: boolean): Promise<void> {
    return new Promise((resolve) => {
      const waiter = {
        byNewScan,
        wake: () => {
          if (timer) clearTimeout(timer);
          this.waiters.delete(waiter);
          resolve();
        },
      };
      const timer = ms === null ? null : setTimeout(waiter.wake, ms);
      this.waiters.add(waiter);
    });
  }

  private async loop(workerId: string): Promise<void> {
    let failures = 0;
    while (this.running) {
      let claimed: ClaimedScan | null;
      try {
        claimed = await this.health.track('claim', () => this.store.scans.claim(workerId, this.options.leaseMs, this.options.maxAttempts));
        failures = 0;
      } catch (error) {
        if (!(error instanceof StoreUnavailableError)) log.error('scan claim failed', { error: String(error) });
        await this.wait(backoffMs(++failures), false);
        continue;
      }
      if (!claimed) {
        // One idle worker polls the store (for scans other instances stored); the others wait to be
        // woken, so an idle service queries once per poll, not once per worker.
        const polls = !this.polling;
        this.polling ||= polls;
        await this.wait(polls ? this.options.idlePollMs : null, true);
        if (polls) this.polling = false;
        continue;
      }
      this.notify(); // more may be queued: the next idle worker looks at once
      // The lease is renewed while the scan is worked on, so a slow fetch or a busy model never
      // hands a live scan to a second worker.
      const scan = claimed;
      const heartbeat = setInterval(() => {
        this.health.track('extend_lease', () => this.store.scans.extendLease(scan.id, workerId, this.options.leaseMs)).catch((error: unknown) => {
          if (!(error instanceof StoreUnavailableError)) log.warn('scan lease renewal failed', { scan: scan.id, error: String(error) });
        });
      }, Math.max(50, Math.floor(this.options.leaseMs / 3)));
      await this.process(workerId, scan)
        .catch((error: unknown) => {
          // Left PROCESSING: the lease expires and another attempt follows (up to maxAttempts).
          if (!(error instanceof StoreUnavailableError)) {
            log.error('scan processing failed; it will be retried after its lease', { scan: scan.id, error: String(error) });
          }
        })
        .finally(() => clearInterval(heartbeat));
    }
  }

  /** Scans share the picked version's queue with /v2: when it is full, wait and retry (the same version) instead of failing. */
  private async analyzeWhenAdmitted(pick: PickedVersion, bytes: Buffer): Promise<Routed> {
    for (let delayMs = 100; ; delayMs = Math.min(delayMs * 2, 2000)) {
      try {
        return await analyzePicked(pick, { data: bytes, encoding: 'bytes' }, {}, null);
      } catch (error) {
        if (!(error instanceof QueueFullError) || !this.running) throw error;
        await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
    }
  }

  private appendLog(id: string, event: string, message: string): Promise<void> {
    return this.health.track('append_log', () => this.store.scans.appendLog(id, event, message));
  }

  /**
   * The scan's final write, retried through a store outage (backing off) for as long as its lease
   * would last, so that a short outage does not cost a second analysis. False as for complete/fail.
   */
  private async finish(operation: 'complete' | 'fail', write: () => Promise<boolean>): Promise<boolean> {
    const giveUpAt = Date.now() + this.options.leaseMs;
    for (let failures = 1; ; failures++) {
      try {
        const finished = await this.health.track(operation, write);
        if (finished) this.webhooks.notify(); // its delivery, if it has a callback URL, is due now
        return finished;
      } catch (error) {
        if (!(error instanceof StoreUnavailableError) || !this.running || Date.now() >= giveUpAt) throw error;
        await this.wait(backoffMs(failures), false);
      }
    }
  }

  private async process(workerId: string, scan: ClaimedScan): Promise<void> {
    await this.appendLog(scan.id, 'worker', `processed by worker ${workerId} (pid ${process.pid})`);
    let bytes = scan.image;
    if (scan.source === 'url') {
      await this.appendLog(scan.id, 'fetching_url', 'fetching the image URL');
      try {
        const fetched = await fetchImage(scan.imageUrl!, this.options.fetchPolicy);
        bytes = fetched.bytes;
        await this.appendLog(scan.id, 'fetched', `${fetched.bytes.length} bytes, ${fetched.contentType}`);
      } catch (error) {
        if (!isFetchRefusedError(error)) throw error;
        await this.failed(scan.id, workerId, `fetch_${error.code}`, error.message);
        return;
      }
    }
    try {
      // One draw per scan: its retries on a full queue stay with the version drawn. The image's
      // memory is freed once analysed.
      const image = freeWhenRead(bytes!);
      const { analysis, model } = await this.analyzeWhenAdmitted(pickVersion(this.registry, this.modelId), bytes!).finally(() => image?.letGo());
      const result: StoredResult = {
        detection: analysis.detection,
        width: analysis.width,
        height: analysis.height,
        box: analysis.cat?.box ?? null,
        confidence: analysis.cat?.confidence ?? null,
        score: analysis.score,
        threshold: appliedThreshold(model, null),
        modelId: model.id,
        modelVersion: this.options.serviceVersion,
        packVersion: model.version,
      };
      if (await this.finish('complete', () => this.store.scans.complete(scan.id, workerId, { ...result }))) {
        metrics.scanOutcomes.inc({ outcome: 'completed', code: '' });
      }
    } catch (error) {
      if (!(error instanceof ImageError)) throw error;
      await this.failed(scan.id, workerId, 'invalid_image', error.message);
    }
  }

  private async failed(id: string, workerId: string, code: string, message: string): Promise<void> {
    if (await this.finish('fail', () => this.store.scans.fail(id, workerId, { code, message }))) metrics.scanOutcomes.inc({ outcome: 'failed', code });
  }
}
