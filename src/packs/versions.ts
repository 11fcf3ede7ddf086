// The versions of one pack id that are loaded: the serving one, and at most one other beside it
// (two versions at once, never more). The other is a candidate (standby: loaded and idle; shadow:
// runs a share of requests beside the serving one, its answer only compared; canary: answers a
// share of requests) or, after a promotion or rollback, the previous serving version, kept for a quick
// rollback. A version is its manifest's `version`.
import type { Model } from './model';

export type CandidateRole = 'standby' | 'shadow' | 'canary';
export type VersionRole = 'serving' | CandidateRole | 'previous';

export interface LoadedVersion {
  model: Model;
  role: VersionRole;
  /** Share of requests a canary answers, or a shadow runs beside the serving one, in (0, 1] (0 for the other roles). */
  share: number;
  /** When it took this role (ms since the epoch). */
  since: number;
}

/** A request's versions: the one that answers (in its role), and a shadow to run beside it. */
export interface Pick {
  model: Model;
  /** 'shadow' only when a request names the shadow version itself (pickNamed). */
  role: 'serving' | 'canary' | 'shadow';
  shadow: Model | null;
}

export class VersionError extends Error {}

const candidate = (model: Model, role: CandidateRole, share: number): LoadedVersion => ({ model, role, share: role === 'standby' ? 0 : share, since: Date.now() });

export class PackVersions {
  private serving: LoadedVersion;
  private other: LoadedVersion | null = null;

  constructor(model: Model) {
    this.serving = { model, role: 'serving', share: 0, since: Date.now() };
  }

  get id(): string {
    return this.serving.model.id;
  }

  get current(): Model {
    return this.serving.model;
  }

  list(): LoadedVersion[] {
    return this.other ? [this.serving, this.other] : [this.serving];
  }

  find(version: string): LoadedVersion | undefined {
    return this.list().find((v) => v.model.manifest.version === version);
  }

  /** The version answering one request (`random` in [0, 1) draws the canary's or the shadow's share). */
  pick(random: number): Pick {
    const other = this.other;
    if (other?.role === 'canary' && random < other.share) return { model: other.model, role: 'canary', shadow: null };
    return this.servingPick(random);
  }

  /** A request addressed to `version`: the serving one (with its shadow, drawn as in pick) or the canary; undefined for any other. */
  pickVersion(version: string, random: number): Pick | undefined {
    if (this.serving.model.manifest.version === version) return this.servingPick(random);
    if (this.other?.role === 'canary' && this.other.model.manifest.version === version) return { model: this.other.model, role: 'canary', shadow: null };
    return undefined;
  }

  /** As pickVersion, and the shadow answers by itself when named (v2 `pack_version`, for an operator comparing versions). */
  pickNamed(version: string, random: number): Pick | undefined {
    const other = this.other;
    if (other?.role === 'shadow' && other.model.manifest.version === version) return { model: other.model, role: 'shadow', shadow: null };
    return this.pickVersion(version, random);
  }

  private servingPick(random: number): Pick {
    const other = this.other;
    return { model: this.serving.model, role: 'serving', shadow: other?.role === 'shadow' && random < other.share ? other.model : null };
  }

  /** Throws VersionError unless `version` could be added beside the serving one (callers check before loading it). */
  checkRoom(version: string): void {
    if (this.find(version)) throw new VersionError(`${this.id}@${version} is already loaded`);
    if (this.other) {
      throw new VersionError(
        `${this.id} already has two versions loaded (${this.describe()}); unload ${this.id}@${this.other.model.manifest.version} first`,
      );
    }
  }

  /** Adds a loaded version beside the serving one; throws VersionError when there is no room (checkRoom). */
  add(model: Model, role: CandidateRole, share: number): void {
    this.checkRoom(model.manifest.version);
    this.other = candidate(model, role, share);
  }

  /** Gives the other version a candidate role. */
  route(version: string, role: CandidateRole, share: number): void {
    this.other = candidate(this.otherVersion(version).model, role, share);
  }

  /** The other version serves; the one that served stays loaded as `previous`. */
  promote(version: string): void {
    const other = this.otherVersion(version);
    const now = Date.now();
    this.other = { model: this.serving.model, role: 'previous', share: 0, since: now };
    this.serving = { model: other.model, role: 'serving', share: 0, since: now };
  }

  /** Removes the other version and returns it (the caller closes it); the serving one cannot be removed. */
  remove(version: string): Model {
    const other = this.otherVersion(version);
    this.other = null;
    return other.model;
  }

  /** `1.2.0 serving, 1.3.0 canary 10%` (a shadow's share only when not all). */
  describe(): string {
    return this.list()
      .map((v) => `${v.model.manifest.version} ${describeRole(v.role, v.share)}`)
      .join(', ');
  }

  private otherVersion(version: string): LoadedVersion {
    if (this.serving.model.manifest.version === version && this.other?.model.manifest.version !== version) {
      throw new VersionError(`${this.id}@${version} is the serving version`);
    }
    if (!this.other || this.other.model.manifest.version !== version) throw new VersionError(`${this.id}@${version} is not loaded (${this.describe()})`);
    return this.other;
  }
}

/** `canary 10%`, `shadow 25%`, `shadow`, `serving`: a role with its share where it has one. */
export function describeRole(role: VersionRole, share: number): string {
  if (role === 'canary' || (role === 'shadow' && share < 1)) return `${role} ${Math.round(share * 100)}%`;
  return role;
}
