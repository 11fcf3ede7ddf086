// One image through the version of a pack id that answers it (a canary takes its share), with the
// shadow version, if any and if drawn for its share, run on the same image after the answer: its result only compared with
// the serving one's (metrics per version), never answered, and run only from spare capacity (the
// serving version has nothing queued and a free batch slot, and no other shadow image is running),
// else skipped and counted, so that a shadow never takes capacity from serving.
// The one door to a version for every caller: v2 and v1 images (a draw per image), OIP (per call),
// v1 video (per video: all its frames one version) and scans (per scan); each then analyses with
// analyzePicked and labels with appliedThreshold, never with a Model taken from the registry.
import { metrics } from '../ops/metrics';
import { isDiscomfort, PackNotLoadedError, type Analysis } from '../pipeline/analysis';
import type { AnalyzeItem } from '../native/addon';
import type { AnalyzeOptions, Model } from './model';
import type { ModelRegistry } from './registry';
import type { Pick } from './versions';

export interface Routed {
  analysis: Analysis;
  /** The version that answered. */
  model: Model;
}

/** Analyses `item` with pack `id`'s answering version; `threshold` (or each version's default) decides the compared labels. */
export async function analyzeRouted(registry: ModelRegistry, id: string, item: AnalyzeItem, options: AnalyzeOptions, threshold: number | null): Promise<Routed> {
  return analyzePicked(pickVersion(registry, id), item, options, threshold);
}

/**
 * The version of pack `id` that answers a request: drawn as pick() does, or the one named (serving
 * or canary; with `shadowAnswers`, the shadow too).
 */
export function pickVersion(registry: ModelRegistry, id: string, version?: string, shadowAnswers = false): Pick {
  const pack = registry.versions(id);
  if (!pack) throw new PackNotLoadedError(id);
  if (version === undefined) return pack.pick(Math.random());
  const pick = shadowAnswers ? pack.pickNamed(version, Math.random()) : pack.pickVersion(version, Math.random());
  if (!pick) throw new PackNotLoadedError(id, version, pack.find(version)?.role, shadowAnswers);
  return pick;
}

/** Analyses `item` with a picked version, and its shadow after it. */
export async function analyzePicked(pick: Pick, item: AnalyzeItem, options: AnalyzeOptions, threshold: number | null): Promise<Routed> {
  const { model, role, shadow } = pick;
  const id = model.id;
  const analysis = await model.analyze(item, options);
  metrics.versionAnswers.inc({ model: id, version: model.version, role });
  if (shadow) runShadow(shadow, item, analysis, model, threshold);
  return { analysis, model };
}

/** The threshold that decides a label: the one asked for, else the answering version's default (its manifest's). */
export function appliedThreshold(model: Model, asked: number | null | undefined): number {
  return asked ?? model.manifest.defaultThreshold;
}

function label(analysis: Analysis, model: Model, threshold: number | null): boolean | null {
  return analysis.score === null ? null : isDiscomfort(analysis.score, appliedThreshold(model, threshold));
}

/** Whether a shadow image may run now: serving has no work waiting and a free batch slot, and no shadow image runs. */
function spareCapacity(serving: Model, shadow: Model): boolean {
  const s = serving.batcher.load();
  const h = shadow.batcher.load();
  return s.queued === 0 && s.inFlight < serving.batcher.options.maxInFlight && h.queued === 0 && h.inFlight === 0;
}

function runShadow(shadow: Model, item: AnalyzeItem, served: Analysis, serving: Model, threshold: number | null): void {
  const labels = { model: shadow.id, version: shadow.version };
  if (!spareCapacity(serving, shadow)) {
    metrics.shadowSkipped.inc({ ...labels, reason: 'busy' });
    return;
  }
  const started = performance.now();
  shadow.analyze(item).then(
    (shadowed) => {
      metrics.shadowLatency.observe(labels, (performance.now() - started) / 1000);
      const [a, b] = [label(served, serving, threshold), label(shadowed, shadow, threshold)];
      metrics.shadowComparisons.inc({
        ...labels,
        detection: served.detection === shadowed.detection ? 'agree' : 'disagree',
        label: a === null && b === null ? 'none' : a === b ? 'agree' : 'disagree',
      });
      if (served.score !== null && shadowed.score !== null) metrics.shadowScoreDifference.observe(labels, Math.abs(served.score - shadowed.score));
    },
    () => metrics.shadowSkipped.inc({ ...labels, reason: 'failed' }),
  );
}
