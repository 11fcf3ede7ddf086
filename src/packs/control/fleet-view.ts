// The fleet view of the admin listener (GET /fleet): each pack id's recorded rollout and each
// instance's heartbeat (src/store/fleet.ts), with whether it has applied every recorded generation
// and whether it has synced lately, so an operator sees which instance serves which version.
import type { FleetInstance, Rollout } from '../../store';

export interface FleetSources {
  rollouts: { all(): Promise<Rollout[]> };
  instances: { list(): Promise<FleetInstance[]> };
  /** CATCOMFORT_PACK_SYNC_MS: an instance silent for three of these is `stale`. */
  syncMs: number;
  /** This instance's id, marked `self`. */
  self: string;
}

export async function fleetView(sources: FleetSources) {
  const [rollouts, instances] = await Promise.all([sources.rollouts.all(), sources.instances.list()]);
  return {
    recorded: rollouts.map((r) => ({
      pack: r.packId,
      generation: r.generation,
      unloaded: r.unloaded,
      serving: r.serving.version,
      other: r.other && { version: r.other.version, role: r.other.role, share: r.other.share },
      updated_at: r.updatedAt,
      updated_by: r.updatedBy,
    })),
    instances: instances.map((i) => ({
      instance: i.instanceId,
      self: i.instanceId === sources.self,
      host: i.host,
      started_at: i.startedAt,
      last_sync: i.seenAt,
      since_sync_ms: i.sinceSeenMs,
      stale: i.sinceSeenMs > 3 * sources.syncMs,
      converged: rollouts.every((r) => (i.applied[r.packId] ?? 0) >= r.generation),
      applied: i.applied,
      versions: i.versions,
    })),
  };
}
