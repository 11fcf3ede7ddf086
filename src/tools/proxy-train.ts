// The train-head machinery measured on a proxy task the shared photos do label (no comfort labels
// exist here): cat photos tagged face_closeup (as "discomfort") against full_body (as "comfort")
// from ../shared/fixtures/photos and photos-dev. For the ImageNet backbone and every detector
// stage and crop size: the held-out balanced accuracy over several seeded splits, against the
// trivial baseline. Prints
// Markdown; writes the labels CSV it used (the form train-head --data takes).
//
//   npm run train:proxy [-- --shared ../shared] [--seeds 30] [--csv proxy-labels.csv]
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { sharedDirFrom } from '../config';
import { readManifest } from '../packs/pack';
import { buildBackbone, imagenetBackbone, STAGES, type Backbone, type StageName } from '../train/backbone';
import type { LabelledPhoto } from '../train/dataset';
import { defaultCacheDir, embedPhotos } from '../train/embed';
import { fitHead } from '../train/fit-head';

const repoRoot = path.resolve(__dirname, '../../..');
const SETS = ['fixtures/photos', 'fixtures/photos-dev'];
const SIZES = [224, 300];
const PROXY_LABELS: Record<string, 0 | 1> = { full_body: 0, face_closeup: 1 };

interface Entry {
  file: string;
  group: string;
  tag: string;
}

function proxyPhotos(shared: string): LabelledPhoto[] {
  return SETS.flatMap((set) => {
    const dir = path.join(shared, set);
    const images = (JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as { images: Entry[] }).images;
    return images
      .filter((e) => e.group === 'cat' && e.tag in PROXY_LABELS)
      .map((e) => ({ file: path.join(dir, e.file), label: PROXY_LABELS[e.tag]! }));
  });
}

const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / v.length;
const pct = (v: number) => `${(v * 100).toFixed(1)} %`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      shared: { type: 'string', default: sharedDirFrom() },
      seeds: { type: 'string', default: '30' },
      csv: { type: 'string', default: path.join(os.tmpdir(), 'catcomfort-proxy-labels.csv') },
    },
  });
  const seeds = Number(values.seeds);
  if (!Number.isInteger(seeds) || seeds < 1) throw new Error(`--seeds must be a positive integer, got "${values.seeds}"`);
  const photos = proxyPhotos(path.resolve(values.shared!));
  writeFileSync(values.csv!, ['path,label', ...photos.map((p) => `${p.file},${p.label === 1 ? 'discomfort' : 'comfort'}`)].join('\n') + '\n');
  const base = await readManifest(path.join(repoRoot, 'models/bc-v1'));
  const n1 = photos.filter((p) => p.label === 1).length;
  console.log(`# Proxy task: face_closeup (${n1}, as "discomfort") vs full_body (${photos.length - n1}, as "comfort")\n`);
  console.log(`Labels CSV: ${values.csv}. Held-out figures: mean over ${seeds} seeded stratified splits (25 % of each class held out).`);
  console.log('Trivial baseline (always the same answer): 50.0 % balanced accuracy.\n');
  console.log('| backbone | crop | photos used | balanced acc. at 0.5 (mean, min) | balanced acc. at threshold chosen on validation | AUC | L2 picked |');
  console.log('|---|---|---|---|---|---|---|');
  const backbones: Backbone[] = [
    imagenetBackbone(base),
    ...(Object.keys(STAGES) as StageName[]).flatMap((stage) => SIZES.map((size) => buildBackbone(base, stage, size, repoRoot))),
  ];
  for (const backbone of backbones) {
    const name = backbone.kind === 'imagenet' ? backbone.stage : `detector ${backbone.stage}`;
    const embedded = await embedPhotos(photos, {
      baseDir: path.join(repoRoot, 'models/bc-v1'),
      backbone,
      cacheDir: defaultCacheDir(),
      progress: (line, final) => final && process.stderr.write(`${name} ${backbone.inputSize}: ${line}\n`),
    });
    const usable = embedded.flatMap((e) => ('embedding' in e ? [e] : []));
    const x = usable.map((e) => e.embedding);
    const y = usable.map((e) => e.photo.label);
    const runs = Array.from({ length: seeds }, (_, seed) => fitHead(x, y, { seed: seed + 1, validationFraction: 0.25 }));
    const atHalf = runs.map((r) => r.balancedAccuracyAtHalf);
    console.log(
      `| ${name} | ${backbone.inputSize} | ${usable.length}/${photos.length} | ${pct(mean(atHalf))}, ${pct(Math.min(...atHalf))} | ` +
        `${pct(mean(runs.map((r) => r.balancedAccuracy)))} | ${mean(runs.map((r) => r.auc)).toFixed(3)} | ` +
        `${[...new Set(runs.map((r) => r.cv.lambda))].join(', ')} |`,
    );
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`train:proxy: ${(error as Error)?.message ?? String(error)}\n`);
  process.exitCode = 1;
});
