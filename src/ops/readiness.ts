// What GET /readyz reports: the service phase, each model pack's state, and the scan store's. The
// port opens before the packs load, so an orchestrator sees them go loading -> warming -> ready.
// The scan store's state is shown but does not decide readiness (docs/scan.md "Scan store faults").
/** The scan store as its last calls found it (src/scan/store-health.ts). */
export type StoreState = 'ok' | 'unavailable';

export type ModelState = 'loading' | 'warming' | 'ready' | 'draining';
export type Phase = 'starting' | 'ready' | 'draining';

/** Per pack id, each loaded version's role (serving, standby, shadow, canary, previous) or load state (loading, warming). */
export type VersionStates = Record<string, Record<string, string>>;

export interface ReadinessReport {
  status: Phase;
  models: Record<string, ModelState>;
  /** Once the packs are up: every version loaded or loading, by pack id. */
  versions?: VersionStates;
  /** The scan store as its last call found it; absent until the scan interface is up. */
  scans?: StoreState;
}

export class Readiness {
  private phase: Phase = 'starting';
  private readonly models = new Map<string, ModelState>();
  private scanStore: (() => StoreState) | null = null;
  private versions: (() => VersionStates) | null = null;

  constructor(private readonly onChange: (ready: boolean) => void = () => {}) {}

  /** The packs that will load, each `loading` until its warm-up starts. */
  expect(modelIds: string[]): void {
    for (const id of modelIds) this.models.set(id, 'loading');
  }

  setModel(id: string, state: ModelState): void {
    this.models.set(id, state);
  }

  setScanStore(state: () => StoreState): void {
    this.scanStore = state;
  }

  /** Loading a version while serving never makes the service unready: it shows here. */
  setVersions(states: () => VersionStates): void {
    this.versions = states;
  }

  /** Every pack warmed and every route registered: requests are taken. */
  markReady(): void {
    this.phase = 'ready';
    this.onChange(true);
  }

  /**
   * Shutting down: /readyz answers 503 so load balancers stop sending, while requests are still
   * served (`serving`) until the port closes (start.ts close).
   */
  markDraining(): void {
    this.phase = 'draining';
    for (const id of this.models.keys()) this.models.set(id, 'draining');
    this.onChange(false);
  }

  /** Ready for new clients: what /readyz and the OIP readiness calls say. */
  get ready(): boolean {
    return this.phase === 'ready';
  }

  /** Requests are taken: ready, or draining before the port closes. */
  get serving(): boolean {
    return this.phase !== 'starting';
  }

  report(): ReadinessReport {
    return {
      status: this.phase,
      models: Object.fromEntries(this.models),
      ...(this.versions && { versions: this.versions() }),
      ...(this.scanStore && { scans: this.scanStore() }),
    };
  }
}
