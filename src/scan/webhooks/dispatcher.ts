// Webhook delivery inside the service: claims due deliveries from the outbox (store/webhooks.ts)
// under a lease, posts each signed event (one attempt per claim) and records the outcome with its
// scan log line. At most `concurrency` attempts run at once in this instance, and at most
// `perReceiver` to one callback URL, so a slow or dead receiver holds up only its own deliveries.
// An attempt is begun only while enough of its lease is left for it to end within it, so two
// instances never send one delivery at the same time.
import { randomUUID } from 'node:crypto';
import type { WebhookConfig } from '../../config';
import { log } from '../../log';
import { metrics } from '../../ops/metrics';
import { backoffMs } from '../backoff';
import { isFetchRefusedError, type FetchPolicy } from '../fetch';
import { StoreUnavailableError, type AttemptOutcome, type ClaimedDelivery, type ScanRecord, type Store } from '../../store';
import type { StoreHealth } from '../store-health';
import { redactUrl } from './callback-url';
import { retryDelayMs } from './schedule';
import { postWebhook, type AttemptAnswer } from './send';
import { webhookHeaders } from './signing';

/** The webhook settings (config's WebhookConfig; a delivery gets retrySchedule's length + 1 attempts), and its parts. */
export interface DispatcherOptions extends WebhookConfig {
  idlePollMs: number;
  policy: FetchPolicy;
  /** The event body of a finished scan (GET /scan/{id} as it was when it finished). */
  body: (scan: ScanRecord, delivery: ClaimedDelivery) => unknown;
}

/** Refusals that another attempt would meet again: the URL or its address is not allowed. */
const PERMANENT = new Set(['url_invalid', 'url_scheme', 'url_credentials', 'address_blocked']);
/** What a lease covers beyond the attempt's own limit (reading the scan, signing, recording). */
const LEASE_MARGIN_MS = 5000;

export class WebhookDispatcher {
  private running = false;
  private loopDone: Promise<void> = Promise.resolve();
  private wake: (() => void) | null = null;
  private readonly inFlight = new Map<string, number>();
  private active = 0;
  private readonly workerId = `${process.pid}-${randomUUID().slice(0, 8)}-webhooks`;

  constructor(
    private readonly store: Store,
    private readonly health: StoreHealth,
    private readonly options: DispatcherOptions,
  ) {}

  private get leaseMs(): number {
    return this.options.timeoutMs + LEASE_MARGIN_MS;
  }

  start(): void {
    if (this.options.concurrency === 0) return;
    this.running = true;
    this.loopDone = this.loop();
  }

  /** A delivery may have been written (a scan finished here): look for due ones now. */
  notify(): void {
    this.wake?.();
  }

  /** Stops claiming and waits for the attempts under way (each ends within its timeout). */
  async stop(): Promise<void> {
    this.running = false;
    this.wake?.();
    await this.loopDone;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.wake?.(), ms);
      this.wake = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
    });
  }

  private async loop(): Promise<void> {
    let failures = 0;
    while (this.running) {
      const free = this.options.concurrency - this.active;
      if (free <= 0) {
        await this.sleep(this.options.idlePollMs); // an attempt ending wakes it
        continue;
      }
      const claimedAt = Date.now();
      let claimed: ClaimedDelivery[];
      try {
        claimed = await this.health.track('webhook_claim', () =>
          this.store.webhooks.claim(this.workerId, this.leaseMs, this.options.retrySchedule.length + 1, free, (url) => (this.inFlight.get(url) ?? 0) >= this.options.perReceiver),
        );
        failures = 0;
      } catch (error) {
        if (!(error instanceof StoreUnavailableError)) log.error('webhook claim failed', { error: String(error) });
        await this.sleep(backoffMs(++failures));
        continue;
      }
      for (const delivery of claimed) this.begin(delivery, claimedAt);
      if (claimed.length < free) await this.sleep(this.options.idlePollMs);
    }
    while (this.active > 0) await this.sleep(this.options.idlePollMs);
  }

  private begin(delivery: ClaimedDelivery, claimedAt: number): void {
    this.active++;
    this.inFlight.set(delivery.url, (this.inFlight.get(delivery.url) ?? 0) + 1);
    void this.attempt(delivery, claimedAt)
      .catch((error: unknown) => {
        // Left leased: the delivery is due again when its lease runs out.
        if (!(error instanceof StoreUnavailableError)) log.error('webhook attempt failed', { scan: delivery.scanId, error: String(error) });
      })
      .finally(() => {
        this.active--;
        const left = (this.inFlight.get(delivery.url) ?? 1) - 1;
        if (left === 0) this.inFlight.delete(delivery.url);
        else this.inFlight.set(delivery.url, left);
        this.wake?.();
      });
  }

  private async attempt(delivery: ClaimedDelivery, claimedAt: number): Promise<void> {
    const [scan, secrets] = await Promise.all([
      this.health.track('webhook_read', () => this.store.scans.get(delivery.ownerId, delivery.scanId)),
      this.health.track('webhook_read', () => this.store.credentials.webhookSecrets(delivery.ownerId)),
    ]);
    if (scan === null) return; // purged meanwhile, and its delivery with it
    // Too little of the lease left to end the attempt within it: it is taken again after the lease.
    if (Date.now() + this.options.timeoutMs + 1000 > claimedAt + this.leaseMs) return;
    const requeued = delivery.requeued ? '; the previous one ended without an outcome' : '';
    const lead = `Attempt ${delivery.attempt} (instance pid ${process.pid}${requeued}) to ${redactUrl(delivery.url)}`;
    let outcome: AttemptOutcome;
    if (secrets.length === 0) {
      const error = 'the credential has no webhook signing secret (catcomfort credentials rotate-webhook-secret issues one)';
      outcome = { kind: 'failed', status: null, error, logMessage: `${lead} not sent: ${error}.` };
    } else {
      const body = JSON.stringify(this.options.body(scan, delivery));
      const started = performance.now();
      let answer: AttemptAnswer | null = null;
      let refusal: { code: string; message: string } | null = null;
      try {
        answer = await postWebhook(delivery.url, body, webhookHeaders(delivery.webhookId, new Date(), body, secrets), this.options.policy, this.options.timeoutMs);
      } catch (error) {
        if (!isFetchRefusedError(error)) throw error;
        refusal = { code: error.code, message: error.message };
      }
      outcome = this.outcome(delivery, lead, Math.round(performance.now() - started), answer, refusal);
    }
    const settled = await this.health.track('webhook_settle', () => this.store.webhooks.settle(delivery, this.workerId, outcome));
    if (settled) metrics.webhookDeliveries.inc({ outcome: outcome.kind });
  }

  private outcome(delivery: ClaimedDelivery, lead: string, ms: number, answer: AttemptAnswer | null, refusal: { code: string; message: string } | null): AttemptOutcome {
    const status = answer?.status ?? null;
    if (answer !== null && status! >= 200 && status! < 300) return { kind: 'delivered', status: status!, logMessage: `${lead}: HTTP ${status} in ${ms} ms; delivered.` };
    const error = answer !== null ? `HTTP ${status}` : `${refusal!.code}: ${refusal!.message}`;
    const said = answer !== null && answer.excerpt !== '' ? `; answer: "${answer.excerpt}"` : '';
    const attempt = `${lead}: ${error} after ${ms} ms${said}`;
    const delay = refusal !== null && PERMANENT.has(refusal.code) ? null : retryDelayMs(this.options.retrySchedule, delivery.attempt);
    if (delay === null) return { kind: 'failed', status, error, logMessage: `${attempt}; no further attempts, delivery failed.` };
    return { kind: 'retry', status, error, retryInMs: delay, logMessage: `${attempt}; next attempt in ${describeWait(delay)}.` };
  }
}

function describeWait(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 3_600_000)} h`;
}
