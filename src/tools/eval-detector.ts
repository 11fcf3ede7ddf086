// Detection quality of a model pack on the shared fixture photos, through the real native
// pipeline: recall on cat photos and false positives on no-cat photos at both cutoffs, by tag,
// and the IoU of the reported box with the labelled one. Prints Markdown.
//
//   npm run eval:detector [-- --pack bc-v1] [--precision fp32|int8|both] [--photos photos|dev|all]
//                         [--views plain,flip] [--combine max|min] [--calibration '[[0.3,0.5],[0.4,0.69]]']
//                         [--verifier on|off|'{"minCatMass":0.05}']
//                         [--grid] [--photo-table] [--json out.json]
//
// --precision: which detector runs: `fp32` (the manifest's detector.file), `int8` (its
// detector.int8.file) or `both` (default when the pack has detector.int8, else fp32), each
// through its own pipeline. With both, each set gets one side-by-side table (fp32 | int8 per tag),
// the PASS/FAIL of two criteria (int8 `detected` within 1 photo of fp32 in every tag; mean IoU of
// all cat photos with a box within 0.01), and the |raw score| difference between the two with the
// photos whose state (detected / low_confidence / not_detected) changes. Whenever the int8
// detector runs, the photos its calibration table was made from (its `photos`, in photos-dev) are
// left out of `dev` for every precision: calibration photos are never reported on.
// --photos: `photos` = ../shared/fixtures/photos (39), `dev` = ../shared/fixtures/photos-dev
// (221), `all` (default) = both, one section each. --verifier off runs without the pack's
// verifier; a JSON object replaces fields of its rule. --views, --combine (how the views' scores
// combine) and --calibration replace the pack's, for every precision.
// --grid adds, per tag, the photos whose raw (uncalibrated) score reaches each of a grid of raw
// cutoffs: the table the calibration knots are chosen from (one per precision). --photo-table
// lists every photo (one per precision). --json writes every photo's precision, raw score,
// confidence and box.
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { sharedDirFrom } from '../config';
import { describeFailure, loadAddon, type DetectionState, type DetectorView, type NativeAddon, type NativePipeline, type PipelineSpec, type Verification, type VerifierSpec } from '../native/addon';
import type { Manifest } from '../packs/manifest';
import { loadPack, readManifest, readModelFile, type LoadedPack, type Precision } from '../packs/pack';
import { backboneFile } from '../packs/pack-files';
import { iou } from './iou';

interface PhotoEntry {
  file: string;
  group: 'cat' | 'nocat';
  tag: string;
  box: [number, number, number, number] | null;
  /** Visible domestic cats (photos-dev only). */
  cat_count?: number;
}

interface PhotoResult {
  precision: Precision;
  set: string;
  file: string;
  group: string;
  tag: string;
  rawScore: number;
  confidence: number;
  box: [number, number, number, number] | null;
  label: [number, number, number, number] | null;
  iou: number | null;
  /** The label is the only animal's: one cat, no dog (where the set says; else true). */
  single: boolean;
  /** The pipeline's answer (the verifier may veto a candidate the cutoffs call `detected`). */
  detection: DetectionState;
  /** The verifier's reading, where it ran. */
  verification: Verification | null;
}

interface Cutoffs {
  detected: number;
  lowConfidence: number;
}

/** One precision's pipeline run: what was loaded and its results by set. */
interface Run {
  pack: LoadedPack;
  results: Map<string, PhotoResult[]>;
}

const SETS: Record<string, string> = { photos: 'fixtures/photos', dev: 'fixtures/photos-dev' };
/** The set the int8 calibration photos come from. */
const CALIBRATION_SET = 'dev';
const GRID = [0.2, 0.25, 0.3, 0.325, 0.35, 0.37, 0.4, 0.45, 0.5, 0.6, 0.69];
/** The int8 criteria: `detected` photos per tag, and the overall mean IoU, off fp32 by at most this. */
const MAX_DETECTED_DIFF = 1;
const MAX_IOU_DIFF = 0.01;

/** A fixture set's labelled photos (its manifest.json). */
const readEntries = (dir: string) => (JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { images: PhotoEntry[] }).images;

async function evaluateSet(addon: NativeAddon, pipeline: NativePipeline, precision: Precision, set: string, dir: string,
  exclude: ReadonlySet<string>): Promise<PhotoResult[]> {
  const out: PhotoResult[] = [];
  for (const entry of readEntries(dir).filter((e) => !exclude.has(e.file))) {
    const [result] = await addon.analyze(pipeline, [{ data: readFileSync(path.join(dir, entry.file)), encoding: 'bytes' }]);
    if (!result || !result.ok) throw new Error(`${entry.file}: ${result && !result.ok ? describeFailure(result) : 'no result'}`);
    const box = result.cat?.box ?? null;
    out.push({
      precision,
      set,
      file: entry.file,
      group: entry.group,
      tag: entry.tag,
      rawScore: result.cat?.rawScore ?? 0,
      confidence: result.cat?.confidence ?? 0,
      box,
      label: entry.box,
      iou: entry.box && box ? iou(box, entry.box) : null,
      single: (entry.cat_count ?? 1) === 1 && entry.tag !== 'with_dog',
      detection: result.detection,
      verification: result.verification ?? null,
    });
  }
  return out;
}

const pct = (k: number, n: number) => (n === 0 ? '-' : `${k}/${n} (${((100 * k) / n).toFixed(0)} %)`);
const mean = (values: number[]) => (values.length === 0 ? NaN : values.reduce((a, b) => a + b, 0) / values.length);
const fixed = (value: number, digits: number) => (Number.isNaN(value) ? '-' : value.toFixed(digits));
const signed = (k: number) => (k > 0 ? `+${k}` : `${k}`);

function tagsOf(results: PhotoResult[]): Array<[string, PhotoResult[]]> {
  const byTag = new Map<string, PhotoResult[]>();
  for (const r of results) {
    const key = `${r.group}/${r.tag}`;
    byTag.set(key, [...(byTag.get(key) ?? []), r]);
  }
  return [...byTag.entries()].sort(([a], [b]) => a.localeCompare(b));
}

/** The table rows: one per tag, then all cat and all no-cat photos. */
function rowsOf(results: PhotoResult[]): Array<[string, PhotoResult[], { tag: boolean }]> {
  return [
    ...tagsOf(results).map(([key, rs]): [string, PhotoResult[], { tag: boolean }] => [key, rs, { tag: true }]),
    ['**cat (all)**', results.filter((r) => r.group === 'cat'), { tag: false }],
    ['**nocat (all)**', results.filter((r) => r.group === 'nocat'), { tag: false }],
  ];
}

/** A row's counts: photos in each state, those the verifier vetoed, and the mean IoU of the `detected`. */
function rowStats(rs: PhotoResult[]): { n: number; detected: number; low: number; vetoed: number; iou: number } {
  const d = rs.filter((r) => r.detection === 'detected');
  return {
    n: rs.length,
    detected: d.length,
    low: rs.filter((r) => r.detection !== 'not_detected').length,
    vetoed: rs.filter((r) => r.verification && !r.verification.passed).length,
    iou: mean(d.filter((r) => r.iou !== null).map((r) => r.iou!)),
  };
}

/** IoU of the cat photos with a box, at any confidence. */
const boxIous = (results: PhotoResult[], keep: (r: PhotoResult) => boolean = () => true) =>
  results.filter((r) => r.group === 'cat' && r.iou !== null && keep(r)).map((r) => r.iou!);

function setHeading(set: string, results: PhotoResult[]): string[] {
  const cats = results.filter((r) => r.group === 'cat').length;
  return [`## ${set}: ${results.length} photos (${cats} cat, ${results.length - cats} no-cat)`, '',
    'Cat photos: share reaching the cutoff (recall). No-cat photos: share reaching it (false positives). IoU: reported box vs labelled box, cat photos reaching the cutoff.', ''];
}

function report(set: string, results: PhotoResult[], cutoffs: Cutoffs): string {
  const lines = setHeading(set, results);
  lines.push(`| group/tag | photos | detected | low_confidence or better (>= ${cutoffs.lowConfidence}) | vetoed by the verifier | mean IoU (detected) |`, '|---|---:|---:|---:|---:|---:|');
  for (const [key, rs] of rowsOf(results)) {
    const s = rowStats(rs);
    lines.push(`| ${key} | ${s.n} | ${pct(s.detected, s.n)} | ${pct(s.low, s.n)} | ${s.vetoed} | ${fixed(s.iou, 2)} |`);
  }
  const anyBox = boxIous(results);
  lines.push('', `Mean IoU over all ${anyBox.length} cat photos with a box (any confidence): ${mean(anyBox).toFixed(3)}; ` +
    `lowest ${anyBox.length ? Math.min(...anyBox).toFixed(2) : '-'}.`);
  const singleBox = boxIous(results, (r) => r.single);
  const otherBox = boxIous(results, (r) => !r.single);
  if (otherBox.length > 0) {
    lines.push(`Of these, one cat and no dog (the label is the only animal's box): ${mean(singleBox).toFixed(3)} over ${singleBox.length}; ` +
      `several cats or a dog (the label is the largest cat's, the detector may report another): ${mean(otherBox).toFixed(3)} over ${otherBox.length}.`);
  }
  return lines.join('\n');
}

function gridTable(title: string, results: PhotoResult[]): string {
  const lines = ['', `### Raw score grid (${title}): photos with raw score >= cutoff`, ''];
  lines.push(`| group/tag | n | ${GRID.map((g) => `>= ${g}`).join(' | ')} |`, `|---|---:|${GRID.map(() => '---:').join('|')}|`);
  for (const [key, rs] of rowsOf(results)) lines.push(`| ${key} | ${rs.length} | ${GRID.map((g) => rs.filter((r) => r.rawScore >= g).length).join(' | ')} |`);
  return lines.join('\n');
}

function photoTable(results: PhotoResult[]): string {
  const lines = ['', `| photo | group/tag | raw | confidence | IoU |`, '|---|---|---:|---:|---:|'];
  for (const r of results) {
    lines.push(`| ${r.file} | ${r.group}/${r.tag} | ${r.rawScore.toFixed(3)} | ${r.confidence.toFixed(3)} | ${r.iou === null ? '-' : r.iou.toFixed(2)} |`);
  }
  return lines.join('\n');
}


/** Linear interpolation between the closest ranks of sorted values. */
function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const at = q * (sorted.length - 1);
  const lo = Math.floor(at);
  return sorted[lo]! + (sorted[Math.ceil(at)]! - sorted[lo]!) * (at - lo);
}

/** fp32 and int8 side by side per tag, the two int8 criteria, and how far the raw scores move. */
function comparison(set: string, fp32: PhotoResult[], int8: PhotoResult[], cutoffs: Cutoffs): string {
  fp32.forEach((r, i) => {
    if (int8[i]?.file !== r.file) throw new Error(`${set}: the fp32 and int8 runs saw different photos`);
  });
  const lines = setHeading(set, fp32);
  lines.push(`detected: confidence >= ${cutoffs.detected} and passed by the verifier (where the pack has one); low_confidence+: low_confidence or better (>= ${cutoffs.lowConfidence}); ` +
    `IoU: mean IoU of the detected cat photos; Δ detected: int8 − fp32 (✓ within ${MAX_DETECTED_DIFF} photo).`, '');
  lines.push('| group/tag | photos | detected fp32 | detected int8 | low_confidence+ fp32 | low_confidence+ int8 | IoU fp32 | IoU int8 | Δ detected |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  const offTags: string[] = [];
  const int8Rows = new Map(rowsOf(int8).map(([key, rs]) => [key, rs]));
  for (const [key, rs, { tag }] of rowsOf(fp32)) {
    const a = rowStats(rs);
    const b = rowStats(int8Rows.get(key)!);
    const diff = b.detected - a.detected;
    const within = Math.abs(diff) <= MAX_DETECTED_DIFF;
    if (tag && !within) offTags.push(`${key} (${signed(diff)})`);
    lines.push(`| ${key} | ${a.n} | ${pct(a.detected, a.n)} | ${pct(b.detected, b.n)} | ${pct(a.low, a.n)} | ${pct(b.low, b.n)} | ` +
      `${fixed(a.iou, 2)} | ${fixed(b.iou, 2)} | ${signed(diff)}${tag ? (within ? ' ✓' : ' ✗') : ''} |`);
  }
  const [iouA, iouB] = [mean(boxIous(fp32)), mean(boxIous(int8))];
  const iouDiff = Math.abs(iouB - iouA);
  lines.push('',
    offTags.length === 0
      ? `**PASS**: int8 \`detected\` within ${MAX_DETECTED_DIFF} photo of fp32 in every tag.`
      : `**FAIL**: int8 \`detected\` off fp32 by more than ${MAX_DETECTED_DIFF} photo in ${offTags.join(', ')}.`,
    `**${iouDiff <= MAX_IOU_DIFF ? 'PASS' : 'FAIL'}**: mean IoU over all cat photos with a box (any confidence): ` +
      `int8 ${iouB.toFixed(3)}, fp32 ${iouA.toFixed(3)}; difference ${fixed(iouDiff, 3)} (at most ${MAX_IOU_DIFF}).`);
  lines.push(...scoreDifferences(set, fp32, int8, cutoffs));
  return lines.join('\n');
}

function scoreDifferences(set: string, fp32: PhotoResult[], int8: PhotoResult[], cutoffs: Cutoffs): string[] {
  const diffs = fp32.map((r, i) => Math.abs(int8[i]!.rawScore - r.rawScore)).sort((a, b) => a - b);
  const moved = fp32.map((r, i) => [r, int8[i]!] as const).filter(([a, b]) => a.detection !== b.detection);
  const lines = ['', `### int8 vs fp32 raw score (${set})`, '',
    `Raw score difference |int8 − fp32| over the ${diffs.length} photos: median ${fixed(quantile(diffs, 0.5), 4)}, ` +
      `p90 ${fixed(quantile(diffs, 0.9), 4)}, max ${fixed(diffs[diffs.length - 1] ?? NaN, 4)}.`,
    `Photos whose state (by calibrated confidence: detected >= ${cutoffs.detected}, low_confidence >= ${cutoffs.lowConfidence}, else not_detected; and the verifier) differs: ${moved.length}.`];
  if (moved.length > 0) {
    lines.push('', '| photo | group/tag | raw fp32 | raw int8 | confidence fp32 | confidence int8 | state fp32 | state int8 |', '|---|---|---:|---:|---:|---:|---|---|');
    for (const [a, b] of moved) {
      lines.push(`| ${a.file} | ${a.group}/${a.tag} | ${a.rawScore.toFixed(3)} | ${b.rawScore.toFixed(3)} | ` +
        `${a.confidence.toFixed(3)} | ${b.confidence.toFixed(3)} | ${a.detection} | ${b.detection} |`);
    }
  }
  return lines;
}

function precisionsOf(option: string | undefined, manifest: Manifest): Precision[] {
  const choice = option ?? (manifest.detector.int8 ? 'both' : 'fp32');
  if (choice !== 'fp32' && choice !== 'int8' && choice !== 'both') throw new Error('--precision must be one of fp32, int8, both');
  if (choice !== 'fp32' && !manifest.detector.int8) throw new Error(`--precision ${choice}: pack ${manifest.id} has no detector.int8`);
  return choice === 'both' ? ['fp32', 'int8'] : [choice];
}

/** The photos the int8 calibration table was made from (file names in photos-dev), checked against its sha256. */
async function calibrationPhotos(dir: string, manifest: Manifest): Promise<{ method: string; photos: Set<string> }> {
  const table = manifest.detector.int8!.calibration;
  const json = JSON.parse((await readModelFile(dir, table.file, table.sha256)).toString('utf8')) as { method: string; photos: string[] };
  return { method: json.method, photos: new Set(json.photos) };
}

/** Says how many photos of the calibration set were left out, and why. */
function exclusionNote(manifest: Manifest, calibration: { method: string; photos: Set<string> }, setDir: string, precisions: number): string {
  const excluded = readEntries(setDir).filter((e) => calibration.photos.has(e.file)).length;
  return `${excluded} ${CALIBRATION_SET} photos excluded${precisions > 1 ? ' for both precisions' : ''}: the int8 detector was ` +
    `calibrated on them (${manifest.detector.int8!.calibration.file}, ${calibration.method}, ${calibration.photos.size} photos), ` +
    'and calibration photos are never reported on.\n';
}

interface Overrides {
  views?: string | undefined;
  combine?: string | undefined;
  calibration?: string | undefined;
  verifier?: string | undefined;
}

function applyOverrides(spec: PipelineSpec, o: Overrides): void {
  if (o.verifier === 'off') delete spec.classifier.verifier;
  else if (o.verifier && o.verifier !== 'on') {
    if (!spec.classifier.verifier) throw new Error('--verifier: the pack has no verifier');
    Object.assign(spec.classifier.verifier, JSON.parse(o.verifier) as Partial<VerifierSpec>);
  }
  if (o.views) spec.detector.views = o.views.split(',') as DetectorView[];
  if (o.combine) spec.detector.viewCombine = o.combine as 'max' | 'min';
  if (o.calibration) spec.detector.calibration = JSON.parse(o.calibration) as Array<[number, number]>;
}

/** Loads the pack at one precision, runs its own pipeline over the sets, and releases it. */
async function evaluatePrecision(addon: NativeAddon, dir: string, precision: Precision, overrides: Overrides,
  sets: Array<[string, string]>, exclude: ReadonlySet<string>): Promise<Run> {
  const pack = await loadPack(dir, {
    maxPixels: 40_000_000,
    batching: { maxBatchSize: 1, maxQueueDelayUs: 0, maxQueue: 1, maxInFlight: 1 },
    sessionBatch: 1,
    precision,
  });
  if (pack.precision !== precision) throw new Error(`asked pack ${pack.manifest.id} for its ${precision} detector, got ${pack.precision}`);
  applyOverrides(pack.spec, overrides);
  const pipeline = await addon.createPipeline(pack.spec);
  const results = new Map<string, PhotoResult[]>();
  try {
    for (const [set, setDir] of sets) {
      results.set(set, await evaluateSet(addon, pipeline, precision, set, setDir, set === CALIBRATION_SET ? exclude : new Set()));
    }
  } finally {
    addon.releasePipeline(pipeline);
  }
  return { pack, results };
}

/** The ImageNet backbone file the verifier read, at the run's precision. */
function verifierFile(pack: LoadedPack): string {
  const c = pack.manifest.classifier;
  if (!('backbone' in c) || pack.backbonePrecision === null) return '';
  return backboneFile(c.backbone, pack.backbonePrecision).file;
}

function heading(runs: Run[]): string {
  const { manifest, spec } = runs[0]!.pack;
  const d = spec.detector;
  const file = (pack: LoadedPack) => (pack.precision === 'int8' ? pack.manifest.detector.int8!.file : pack.manifest.detector.file);
  const detectors = runs.length === 1 ? `detector ${file(runs[0]!.pack)}` : `detectors ${runs.map((r) => `${r.pack.precision} ${file(r.pack)}`).join(' and ')}`;
  const v = spec.classifier.verifier;
  const verifier = v
    ? `${verifierFile(runs[0]!.pack)}: vetoes above ${v.maxLookalikeMass} on ${v.lookalikeClasses.length} look-alike classes, ` +
      `checks ${v.maxCandidates} candidates, prefers cat (${v.catClasses.length} classes) over dog (${v.dogClasses.length})`
    : 'none';
  return `# Detector evaluation: pack ${manifest.id} ${manifest.version}, ${detectors} (${d.output.format}), ` +
    `views [${d.views.join(', ')}] (${d.viewCombine}), calibration ${JSON.stringify(d.calibration)}, verifier ${verifier}\n`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      pack: { type: 'string', default: 'bc-v1' },
      precision: { type: 'string' },
      photos: { type: 'string', default: 'all' },
      views: { type: 'string' },
      combine: { type: 'string' },
      calibration: { type: 'string' },
      verifier: { type: 'string' },
      grid: { type: 'boolean', default: false },
      'photo-table': { type: 'boolean', default: false },
      json: { type: 'string' },
    },
  });
  const repo = path.resolve(__dirname, '../../..');
  const shared = sharedDirFrom(process.env);
  const setNames = values.photos === 'all' ? Object.keys(SETS) : [values.photos!];
  for (const s of setNames) if (!SETS[s]) throw new Error(`--photos must be one of ${Object.keys(SETS).join(', ')}, all`);
  const sets = setNames.map((s): [string, string] => [s, path.join(shared, SETS[s]!)]);
  const dir = path.isAbsolute(values.pack!) ? values.pack! : path.join(repo, 'models', values.pack!);
  const manifest = await readManifest(dir);
  const precisions = precisionsOf(values.precision, manifest);
  const calibration = precisions.includes('int8') ? await calibrationPhotos(dir, manifest) : null;
  const addon = loadAddon();
  addon.configure({ providers: ['cpu'], deviceId: 0, trtCacheDir: os.tmpdir(), trtFp16: false, poolThreads: os.availableParallelism(), intraOpThreads: 1 });
  const runs: Run[] = [];
  for (const precision of precisions) runs.push(await evaluatePrecision(addon, dir, precision, values, sets, calibration?.photos ?? new Set()));

  const cutoffs: Cutoffs = manifest.cutoffs;
  console.log(heading(runs));
  if (calibration && setNames.includes(CALIBRATION_SET)) console.log(exclusionNote(manifest, calibration, path.join(shared, SETS[CALIBRATION_SET]!), runs.length));
  for (const [set] of sets) {
    const title = `${set} (${SETS[set]})`;
    const [a, b] = runs.map((r) => r.results.get(set)!);
    console.log(b ? comparison(title, a!, b, cutoffs) : report(title, a!, cutoffs));
    for (const run of runs) {
      const label = runs.length > 1 ? `${title}, ${run.pack.precision}` : title;
      if (values.grid) console.log(gridTable(label, run.results.get(set)!));
      if (values['photo-table']) console.log(`${runs.length > 1 ? `\n### Photos (${label})\n` : ''}${photoTable(run.results.get(set)!)}`);
    }
    console.log('');
  }
  if (values.json) writeFileSync(values.json, JSON.stringify(runs.flatMap((r) => [...r.results.values()].flat()), null, 1));
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
