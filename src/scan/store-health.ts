// Whether the scan store answers, as its callers find out: every store call of the routes and the
// workers goes through track(). A StoreUnavailableError marks the store down (one warning, however
// many calls fail); it is up again once calls have succeeded for STABLE_MS with none failing (one
// line, with how long it was down and how many calls failed). The wait keeps a store that answers
// reads but not writes (a full disk) from flapping. /readyz and the metrics read the state;
// nothing here retries.
import { log } from '../log';
import { metrics } from '../ops/metrics';
import type { StoreState } from '../ops/readiness';
import { StoreUnavailableError } from '../store/types';

/** Store calls by name, the label of catcomfort_scan_store_errors_total. */
export type StoreOperation =
  | 'authenticate'
  | 'submit'
  | 'get'
  | 'list'
  | 'claim'
  | 'extend_lease'
  | 'append_log'
  | 'complete'
  | 'fail'
  | 'purge'
  | 'queue_depth'
  | 'webhook_claim'
  | 'webhook_read'
  | 'webhook_settle';

/** How long calls must succeed, with none failing, before a store that was down counts as up. */
export const STABLE_MS = 5000;

export class StoreHealth {
  private down: { since: number; lastFailure: number; errors: number } | null = null;

  constructor() {
    metrics.scanStoreUp.set(1);
  }

  get state(): StoreState {
    return this.down === null ? 'ok' : 'unavailable';
  }

  async track<T>(operation: StoreOperation, call: () => Promise<T>): Promise<T> {
    let value: T;
    try {
      value = await call();
    } catch (error) {
      if (error instanceof StoreUnavailableError) this.failed(operation, error);
      throw error;
    }
    this.answered();
    return value;
  }

  private failed(operation: StoreOperation, error: StoreUnavailableError): void {
    metrics.scanStoreErrors.inc({ operation });
    if (this.down !== null) {
      this.down.errors += 1;
      this.down.lastFailure = Date.now();
      return;
    }
    this.down = { since: Date.now(), lastFailure: Date.now(), errors: 1 };
    metrics.scanStoreUp.set(0);
    log.warn('scan store unavailable: submits and reads answer 503 store_unavailable, workers back off', { operation, error: error.message });
  }

  private answered(): void {
    if (this.down === null || Date.now() - this.down.lastFailure < STABLE_MS) return;
    const { since, errors } = this.down;
    this.down = null;
    metrics.scanStoreUp.set(1);
    log.info('scan store available again', { down_ms: Date.now() - since, failed_calls: errors });
  }
}
