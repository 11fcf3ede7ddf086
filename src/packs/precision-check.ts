// Which precision a pack serves on this machine, proven before it serves. When int8 is wanted (the
// CPU default) and the pack has an int8 form, its int8 and fp32 pipelines analyse the photos of
// its manifest's `selfCheck` side by side: int8 serves only when every photo gets the same
// detection state, its confidence and verifier class masses move by at most the manifest's
// `tolerance` and its comfort score by at most `scoreTolerance` (a head on 1280 int8 features moves
// more: docs/packs.md "int8 on every CPU"). Otherwise fp32 serves, with one warning naming what moved and the CPU's
// vector features. CATCOMFORT_PRECISION=int8 keeps int8 whatever the check says (with a warning
// when it failed or could not run).
import { log } from '../log';
import { cpuFeatures } from '../native/cpu-features';
import { describeFailure, type ItemResult, type NativeAddon, type NativePipeline } from '../native/addon';
import type { Manifest } from './manifest';
import { loadPack, readManifest, readPackFile, type LoadedPack, type PackLimits, type Precision } from './pack';

export interface PrecisionWanted {
  /** The precision asked for: CATCOMFORT_PRECISION, else int8 on CPU and fp32 on GPU providers. */
  precision: Precision;
  /** true when CATCOMFORT_PRECISION set it. */
  forced: boolean;
}

/** What serves and why (GET /v2/models, /v2/stats, the `model loaded` line). */
export interface PrecisionChoice {
  precision: Precision;
  reason: string;
}

export interface PhotoAnswer {
  what: string;
  result: ItemResult;
}

function figures(r: ItemResult): Record<string, number | null> {
  if (!r.ok) return {};
  const v = r.verification;
  return {
    confidence: r.cat?.confidence ?? 0,
    'comfort score': r.score,
    'look-alike mass': v?.lookalikeMass ?? null,
    'cat mass': v?.catMass ?? null,
    'dog mass': v?.dogMass ?? null,
  };
}

export interface Tolerances {
  tolerance: number;
  scoreTolerance: number;
}

/** The differences between the int8 and fp32 answers beyond the tolerances, and the largest difference seen (comfort score aside). */
export function compareAnswers(int8: PhotoAnswer[], fp32: PhotoAnswer[], { tolerance, scoreTolerance }: Tolerances): { problems: string[]; largest: number } {
  const problems: string[] = [];
  let largest = 0;
  int8.forEach(({ what, result: a }, i) => {
    const b = fp32[i]!.result;
    if (!a.ok || !b.ok) {
      problems.push(`${what}: ${a.ok ? 'ok' : describeFailure(a)} at int8, ${b.ok ? 'ok' : describeFailure(b)} at fp32`);
      return;
    }
    if (a.detection !== b.detection) problems.push(`${what}: ${a.detection} at int8, ${b.detection} at fp32`);
    const [fa, fb] = [figures(a), figures(b)];
    for (const name of Object.keys(fb)) {
      const [x, y] = [fa[name] ?? null, fb[name] ?? null];
      if (x === null || y === null) continue;
      const d = Math.abs(x - y);
      const isScore = name === 'comfort score';
      const limit = isScore ? scoreTolerance : tolerance;
      if (!isScore) largest = Math.max(largest, d);
      if (d > limit) problems.push(`${what}: ${name} ${x.toFixed(3)} at int8, ${y.toFixed(3)} at fp32 (differs by ${d.toFixed(3)} > ${limit})`);
    }
  });
  return { problems, largest };
}

async function answers(addon: NativeAddon, pipeline: NativePipeline, photos: Array<{ what: string; data: Buffer }>): Promise<PhotoAnswer[]> {
  const results = await addon.analyze(pipeline, photos.map((p) => ({ data: p.data, encoding: 'bytes' as const })));
  return results.map((result, i) => ({ what: photos[i]!.what, result }));
}

function hasInt8(m: Manifest): boolean {
  return m.detector.int8 !== undefined || 'backbone' in m.classifier;
}

/** The pack's self-check photos, sha256-checked. */
async function selfCheckPhotos(dir: string, m: Manifest): Promise<Array<{ what: string; data: Buffer }>> {
  const photos = m.selfCheck?.photos ?? [];
  return Promise.all(photos.map(async (p) => ({ what: `${p.file} (${p.what})`, data: await readPackFile(dir, m, p, 'self-check photo') })));
}

/** The pack loaded at a precision, with a pipeline of its own. */
async function open(addon: NativeAddon, pack: LoadedPack): Promise<{ pack: LoadedPack; pipeline: NativePipeline }> {
  return { pack, pipeline: await addon.createPipeline(pack.spec) };
}

/**
 * The self-check on `manifest`'s pack: what differs between its int8 and fp32 answers on its photos
 * (none when int8 may serve), and the pack loaded at each precision. Each precision runs on a
 * pipeline of its own, released after (one at a time), so the serving pipeline, made later from
 * the loaded pack, starts with its counters at zero.
 */
async function selfCheck(addon: NativeAddon, dir: string, manifest: Manifest, limits: PackLimits) {
  const photos = await selfCheckPhotos(dir, manifest);
  const run = async (precision: Precision) => {
    const { pack, pipeline } = await open(addon, await loadPack(dir, { ...limits, precision }));
    try {
      return { pack, answers: await answers(addon, pipeline, photos) };
    } finally {
      addon.releasePipeline(pipeline);
    }
  };
  const [int8, fp32] = [await run('int8'), await run('fp32')];
  return { ...compareAnswers(int8.answers, fp32.answers, manifest.selfCheck!), photos: photos.length, packs: { int8: int8.pack, fp32: fp32.pack } };
}

/**
 * Loads the pack in `dir` at the precision it may serve here, with its pipeline: fp32 when asked,
 * or when the pack has no int8 form or its int8 form fails the self-check (unless forced).
 */
export async function loadProven(
  addon: NativeAddon,
  dir: string,
  limits: PackLimits,
  wanted: PrecisionWanted,
): Promise<{ pack: LoadedPack; pipeline: NativePipeline; choice: PrecisionChoice }> {
  const serve = async (precision: Precision, pack: LoadedPack | Promise<LoadedPack>, reason: string) => ({ ...(await open(addon, await pack)), choice: { precision, reason } });
  const load = (precision: Precision) => loadPack(dir, { ...limits, precision });
  if (wanted.precision === 'fp32') return serve('fp32', load('fp32'), wanted.forced ? 'CATCOMFORT_PRECISION=fp32' : 'fp32 on a GPU provider');
  const manifest = await readManifest(dir);
  if (!hasInt8(manifest)) return serve('fp32', load('fp32'), 'the pack has no int8 form');

  const id = `${manifest.id}@${manifest.version}`;
  const refuse = (reason: string, packs?: Record<Precision, LoadedPack>) => {
    log.warn(wanted.forced ? 'int8 self-check did not pass, but CATCOMFORT_PRECISION=int8 forces int8: answers may differ from fp32' : 'int8 refused: serving fp32', {
      model: id,
      reason,
      cpu_features: cpuFeatures(),
    });
    return wanted.forced
      ? serve('int8', packs?.int8 ?? load('int8'), `forced by CATCOMFORT_PRECISION=int8; self-check: ${reason}`)
      : serve('fp32', packs?.fp32 ?? load('fp32'), `int8 refused: ${reason}`);
  };
  if (!manifest.selfCheck) return refuse('the pack ships no self-check photos (manifest selfCheck)');
  const { problems, largest, photos, packs } = await selfCheck(addon, dir, manifest, limits);
  if (problems.length > 0) return refuse(`self-check failed on this CPU: ${problems.join('; ')}`, packs);
  log.info('int8 self-check passed', { model: id, photos, largest_difference: Number(largest.toFixed(4)), cpu_features: cpuFeatures() });
  return serve('int8', packs.int8, `self-check passed: ${photos} photos, same states, largest difference ${largest.toFixed(3)} (tolerance ${manifest.selfCheck.tolerance})`);
}
