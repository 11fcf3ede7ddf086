// The fleet's instances as each reports itself at every pack sync (src/packs/control/start.ts):
// what it applied of each pack's rollout and the versions it has loaded, on the database clock, so
// the admin listener's fleet view shows which instance serves what and how long since it synced.
// Written once for both databases over the SQL seam (sql.ts).
import type { SqlDb } from './sql';

/** Per pack id, each loaded version's role (as /readyz's `versions`). */
export type LoadedVersions = Record<string, Record<string, string>>;

export interface InstanceBeat {
  instanceId: string;
  host: string;
  startedAt: string;
  /** Per pack id, the rollout generation this instance applied. */
  applied: Record<string, number>;
  versions: LoadedVersions;
}

export interface FleetInstance extends InstanceBeat {
  seenAt: string;
  /** Since the last beat, on the database clock. */
  sinceSeenMs: number;
}

/** Instances silent this long are dropped from the table (they stopped without leaving). */
const FORGET_AFTER_MS = 24 * 3_600_000;

interface InstanceRow {
  instance_id: string;
  host: string;
  started_at: unknown;
  seen_at: unknown;
  now_at: unknown;
  applied: unknown;
  versions: unknown;
}

export class FleetInstances {
  constructor(private readonly db: SqlDb) {}

  async beat(beat: InstanceBeat): Promise<void> {
    const d = this.db.dialect;
    await this.db.run(
      `INSERT INTO fleet_instances (instance_id, host, started_at, seen_at, applied, versions) VALUES ($1, $2, ${d.timeParam('$3')}, ${d.now}, $4, $5)
       ON CONFLICT (instance_id) DO UPDATE SET seen_at = ${d.now}, applied = excluded.applied, versions = excluded.versions`,
      [beat.instanceId, beat.host, d.timeValue(beat.startedAt), JSON.stringify(beat.applied), JSON.stringify(beat.versions)],
    );
    await this.db.run(`DELETE FROM fleet_instances WHERE seen_at < ${d.plusMs(d.now, String(-FORGET_AFTER_MS))}`);
  }

  /** An instance that stops cleanly leaves the view. */
  async leave(instanceId: string): Promise<void> {
    await this.db.run('DELETE FROM fleet_instances WHERE instance_id = $1', [instanceId]);
  }

  async list(): Promise<FleetInstance[]> {
    const d = this.db.dialect;
    const rows = await this.db.query<InstanceRow>(`SELECT *, ${d.now} AS now_at FROM fleet_instances ORDER BY instance_id`);
    return rows.map((r) => ({
      instanceId: r.instance_id,
      host: r.host,
      startedAt: d.iso(r.started_at),
      seenAt: d.iso(r.seen_at),
      sinceSeenMs: Math.max(0, Date.parse(d.iso(r.now_at)) - Date.parse(d.iso(r.seen_at))),
      applied: d.json<Record<string, number>>(r.applied),
      versions: d.json<LoadedVersions>(r.versions),
    }));
  }
}
