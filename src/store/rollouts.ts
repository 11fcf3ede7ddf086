// Pack rollouts: per pack id, the versions the fleet should have loaded (the serving one and the
// one beside it, with its role), or that the id is unloaded, recorded by the instance that carried
// out an admin action and read by every instance, which converges to it
// (src/packs/control/pack-control.ts). Each record raises the pack's generation by compare-and-set
// (the generation the instance acted on), so of two actions at once on two instances one is
// recorded and the other is refused, never lost silently; a row is never deleted, so generations
// only grow. Written once for both databases over the SQL seam (sql.ts).
import type { SqlDb } from './sql';

export interface RolloutVersion {
  version: string;
  /** The pack folder, the same path on every instance. */
  dir: string;
}

export interface Rollout {
  packId: string;
  serving: RolloutVersion;
  other: (RolloutVersion & { role: 'standby' | 'shadow' | 'canary' | 'previous'; share: number }) | null;
  /** The pack id was unloaded: every instance unloads it; `serving` is what served last. */
  unloaded: boolean;
  generation: number;
  updatedAt: string;
  /** The admin key id that made the change. */
  updatedBy: string;
}

/** What a record sets: the versions wanted, or (`unloaded`) that the pack id goes, with what served last. */
export type RolloutChange = Pick<Rollout, 'serving' | 'other' | 'unloaded'>;

interface RolloutRow {
  pack_id: string;
  serving_version: string;
  serving_dir: string;
  other_version: string | null;
  other_dir: string | null;
  other_role: 'standby' | 'shadow' | 'canary' | 'previous' | null;
  other_share: number | null;
  unloaded: number;
  generation: number;
  updated_at: unknown;
  updated_by: string;
}

export class PackRollouts {
  constructor(private readonly db: SqlDb) {}

  async all(): Promise<Rollout[]> {
    const rows = await this.db.query<RolloutRow>('SELECT * FROM pack_rollouts ORDER BY pack_id');
    return rows.map((r) => ({
      packId: r.pack_id,
      serving: { version: r.serving_version, dir: r.serving_dir },
      other:
        r.other_version === null || r.other_dir === null || r.other_role === null
          ? null
          : { version: r.other_version, dir: r.other_dir, role: r.other_role, share: otherShare(r.other_role, r.other_share) },
      unloaded: Number(r.unloaded) === 1,
      generation: Number(r.generation),
      updatedAt: this.db.dialect.iso(r.updated_at),
      updatedBy: r.updated_by,
    }));
  }

  /**
   * Records a change of a pack id, if its generation is still `known` (0: no row yet). Returns the
   * new generation, or null when another instance recorded a change first.
   */
  async record(packId: string, change: RolloutChange, updatedBy: string, known: number): Promise<number | null> {
    const { serving, other, unloaded } = change;
    const generation = known + 1;
    const values = [packId, serving.version, serving.dir, other?.version ?? null, other?.dir ?? null, other?.role ?? null, other?.share ?? null, unloaded ? 1 : 0, generation, updatedBy];
    const now = this.db.dialect.now;
    const changed =
      known === 0
        ? await this.db.run(
            `INSERT INTO pack_rollouts (pack_id, serving_version, serving_dir, other_version, other_dir, other_role, other_share, unloaded, generation, updated_at, updated_by)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, ${now}, $10) ON CONFLICT (pack_id) DO NOTHING`,
            values,
          )
        : await this.db.run(
            `UPDATE pack_rollouts SET serving_version = $2, serving_dir = $3, other_version = $4, other_dir = $5, other_role = $6, other_share = $7,
               unloaded = $8, generation = $9, updated_at = ${now}, updated_by = $10 WHERE pack_id = $1 AND generation = $11`,
            [...values, known],
          );
    return changed === 1 ? generation : null;
  }
}

/** A shadow recorded before shadows had a share (0) ran beside every request. */
function otherShare(role: string, share: number | null): number {
  const value = Number(share ?? 0);
  return role === 'shadow' && value === 0 ? 1 : value;
}
