// Detection quality of a model pack on the shared fixture photos, through the real native
// pipeline: recall on cat photos and false positives on no-cat photos at both cutoffs, by tag,
// and the IoU of the reported box with the labelled one. Prints Markdown.
//
//   npm run eval:detector [-- --pack bc-v1] [--photos photos|dev|all] [--views plain,flip]
//                         [--combine max|min] [--calibration '[[0.3,0.5],[0.4,0.69]]'] [--grid] [--photo-table]
//                         [--json out.json]
//
// --photos: `photos` = ../shared/fixtures/photos (39), `dev` = ../shared/fixtures/photos-dev
// (221), `all` (default) = both, one section each. --views, --combine (how the views' scores
// combine) and --calibration replace the pack's.
// --grid adds, per tag, the photos whose raw (uncalibrated) score reaches each of a grid of raw
// cutoffs: the table the calibration knots are chosen from. --photo-table lists every photo.
// --json writes every photo's raw score, confidence and box.
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { describeFailure, loadAddon, type DetectorView, type NativeAddon, type NativePipeline } from '../native/addon';
import { loadPack } from '../models/pack';
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
}

const SETS: Record<string, string> = { photos: 'fixtures/photos', dev: 'fixtures/photos-dev' };
const GRID = [0.2, 0.25, 0.3, 0.325, 0.35, 0.37, 0.4, 0.45, 0.5, 0.6, 0.69];

async function evaluateSet(addon: NativeAddon, pipeline: NativePipeline, set: string, dir: string): Promise<PhotoResult[]> {
  const entries = (JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { images: PhotoEntry[] }).images;
  const out: PhotoResult[] = [];
  for (const entry of entries) {
    const [result] = await addon.analyze(pipeline, [{ data: readFileSync(path.join(dir, entry.file)), encoding: 'bytes' }]);
    if (!result || !result.ok) throw new Error(`${entry.file}: ${result && !result.ok ? describeFailure(result) : 'no result'}`);
    const box = result.cat?.box ?? null;
    out.push({
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
    });
  }
  return out;
}

const pct = (k: number, n: number) => (n === 0 ? '-' : `${k}/${n} (${((100 * k) / n).toFixed(0)} %)`);
const mean = (values: number[]) => (values.length === 0 ? NaN : values.reduce((a, b) => a + b, 0) / values.length);

function tagsOf(results: PhotoResult[]): Array<[string, PhotoResult[]]> {
  const byTag = new Map<string, PhotoResult[]>();
  for (const r of results) {
    const key = `${r.group}/${r.tag}`;
    byTag.set(key, [...(byTag.get(key) ?? []), r]);
  }
  return [...byTag.entries()].sort(([a], [b]) => a.localeCompare(b));
}

function report(set: string, results: PhotoResult[], detected: number, low: number, grid: boolean, photoTable: boolean): string {
  const lines: string[] = [];
  const cats = results.filter((r) => r.group === 'cat');
  const nocats = results.filter((r) => r.group === 'nocat');
  lines.push(`## ${set}: ${results.length} photos (${cats.length} cat, ${nocats.length} no-cat)`, '');
  lines.push('Cat photos: share reaching the cutoff (recall). No-cat photos: share reaching it (false positives). IoU: reported box vs labelled box, cat photos reaching the cutoff.', '');
  lines.push(`| group/tag | photos | detected (>= ${detected}) | low_confidence or better (>= ${low}) | mean IoU (>= ${detected}) |`, '|---|---:|---:|---:|---:|');
  const row = (key: string, rs: PhotoResult[]) => {
    const d = rs.filter((r) => r.confidence >= detected);
    const l = rs.filter((r) => r.confidence >= low);
    const ious = d.filter((r) => r.iou !== null).map((r) => r.iou!);
    lines.push(`| ${key} | ${rs.length} | ${pct(d.length, rs.length)} | ${pct(l.length, rs.length)} | ${ious.length ? mean(ious).toFixed(2) : '-'} |`);
  };
  for (const [key, rs] of tagsOf(results)) row(key, rs);
  row('**cat (all)**', cats);
  row('**nocat (all)**', nocats);
  const anyBox = cats.filter((r) => r.iou !== null).map((r) => r.iou!);
  lines.push('', `Mean IoU over all ${anyBox.length} cat photos with a box (any confidence): ${mean(anyBox).toFixed(3)}; ` +
    `lowest ${anyBox.length ? Math.min(...anyBox).toFixed(2) : '-'}.`);
  const singleBox = cats.filter((r) => r.iou !== null && r.single).map((r) => r.iou!);
  const otherBox = cats.filter((r) => r.iou !== null && !r.single).map((r) => r.iou!);
  if (otherBox.length > 0) {
    lines.push(`Of these, one cat and no dog (the label is the only animal's box): ${mean(singleBox).toFixed(3)} over ${singleBox.length}; ` +
      `several cats or a dog (the label is the largest cat's, the detector may report another): ${mean(otherBox).toFixed(3)} over ${otherBox.length}.`);
  }

  if (grid) {
    lines.push('', `### Raw score grid (${set}): photos with raw score >= cutoff`, '');
    lines.push(`| group/tag | n | ${GRID.map((g) => `>= ${g}`).join(' | ')} |`, `|---|---:|${GRID.map(() => '---:').join('|')}|`);
    const gridRow = (key: string, rs: PhotoResult[]) =>
      lines.push(`| ${key} | ${rs.length} | ${GRID.map((g) => rs.filter((r) => r.rawScore >= g).length).join(' | ')} |`);
    for (const [key, rs] of tagsOf(results)) gridRow(key, rs);
    gridRow('**cat (all)**', cats);
    gridRow('**nocat (all)**', nocats);
  }
  if (photoTable) {
    lines.push('', `| photo | group/tag | raw | confidence | IoU |`, '|---|---|---:|---:|---:|');
    for (const r of results) {
      lines.push(`| ${r.file} | ${r.group}/${r.tag} | ${r.rawScore.toFixed(3)} | ${r.confidence.toFixed(3)} | ${r.iou === null ? '-' : r.iou.toFixed(2)} |`);
    }
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      pack: { type: 'string', default: 'bc-v1' },
      photos: { type: 'string', default: 'all' },
      views: { type: 'string' },
      combine: { type: 'string' },
      calibration: { type: 'string' },
      grid: { type: 'boolean', default: false },
      'photo-table': { type: 'boolean', default: false },
      json: { type: 'string' },
    },
  });
  const repo = path.resolve(__dirname, '../../..');
  const shared = path.resolve(repo, process.env.CATCOMFORT_SHARED_DIR ?? '../shared');
  const sets = values.photos === 'all' ? Object.keys(SETS) : [values.photos!];
  for (const s of sets) if (!SETS[s]) throw new Error(`--photos must be one of ${Object.keys(SETS).join(', ')}, all`);
  const addon = loadAddon();
  addon.configure({ providers: ['cpu'], deviceId: 0, trtCacheDir: os.tmpdir(), trtFp16: false, poolThreads: os.availableParallelism(), intraOpThreads: 1 });
  const pack = await loadPack(path.isAbsolute(values.pack!) ? values.pack! : path.join(repo, 'models', values.pack!), {
    maxPixels: 40_000_000,
    batching: { maxBatchSize: 1, maxQueueDelayUs: 0, maxQueue: 1, maxInFlight: 1 },
    sessionBatch: 1,
  });
  if (values.views) pack.spec.detector.views = values.views.split(',') as DetectorView[];
  if (values.combine) pack.spec.detector.viewCombine = values.combine as 'max' | 'min';
  if (values.calibration) pack.spec.detector.calibration = JSON.parse(values.calibration) as Array<[number, number]>;
  const pipeline = await addon.createPipeline(pack.spec);
  const { detected, lowConfidence } = pack.manifest.cutoffs;
  const d = pack.spec.detector;
  console.log(`# Detector evaluation: pack ${pack.manifest.id} ${pack.manifest.version}, detector ${pack.manifest.detector.file} (${d.output.format}), ` +
    `views [${d.views.join(', ')}] (${d.viewCombine}), calibration ${JSON.stringify(d.calibration)}\n`);
  const all: PhotoResult[] = [];
  try {
    for (const set of sets) {
      const results = await evaluateSet(addon, pipeline, set, path.join(shared, SETS[set]!));
      all.push(...results);
      console.log(`${report(`${set} (${SETS[set]})`, results, detected, lowConfidence, values.grid!, values['photo-table']!)}\n`);
    }
  } finally {
    addon.releasePipeline(pipeline);
  }
  if (values.json) writeFileSync(values.json, JSON.stringify(all, null, 1));
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
