// Pack rollouts: per pack id, the versions the fleet should have loaded (the serving one and the
// one beside it, with its role), recorded by the instance that carried out an admin action and
// read by every instance, which converges to it (src/packs/control/pack-control.ts). Each record raises
// the pack's generation, so an instance knows what it has already applied. Written once for both
// databases over the SQL seam (sql.ts).
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
  generation: number;
  updatedAt: string;
  /** The admin key id that made the change. */
  updatedBy: string;
}

interface RolloutRow {
  pack_id: string;
  serving_version: string;
  serving_dir: string;
  other_version: string | null;
  other_dir: string | null;
  other_role: 'standby' | 'shadow' | 'canary' | 'previous' | null;
  other_share: number | null;
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
      generation: Number(r.generation),
      updatedAt: this.db.dialect.iso(r.updated_at),
      updatedBy: r.updated_by,
    }));
  }

  /** Records a pack's wanted versions; returns the new generation. */
  record(packId: string, serving: RolloutVersion, other: Rollout['other'], updatedBy: string): Promise<number> {
    return this.db.transaction(async (tx) => {
      const [row] = await tx.query<{ generation: number }>('SELECT generation FROM pack_rollouts WHERE pack_id = $1', [packId]);
      const generation = Number(row?.generation ?? 0) + 1;
      const values = [packId, serving.version, serving.dir, other?.version ?? null, other?.dir ?? null, other?.role ?? null, other?.share ?? null, generation, updatedBy];
      const now = tx.dialect.now;
      if (row === undefined) {
        await tx.run(
          `INSERT INTO pack_rollouts (pack_id, serving_version, serving_dir, other_version, other_dir, other_role, other_share, generation, updated_at, updated_by)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, ${now}, $9)`,
          values,
        );
      } else {
        await tx.run(
          `UPDATE pack_rollouts SET serving_version = $2, serving_dir = $3, other_version = $4, other_dir = $5, other_role = $6, other_share = $7,
             generation = $8, updated_at = ${now}, updated_by = $9 WHERE pack_id = $1`,
          values,
        );
      }
      return generation;
    });
  }

  /** Forgets a pack id (it was unloaded). */
  async forget(packId: string): Promise<void> {
    await this.db.run('DELETE FROM pack_rollouts WHERE pack_id = $1', [packId]);
  }
}

/** A shadow recorded before shadows had a share (0) ran beside every request. */
function otherShare(role: string, share: number | null): number {
  const value = Number(share ?? 0);
  return role === 'shadow' && value === 0 ? 1 : value;
}
