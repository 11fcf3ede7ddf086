// Detection quality of a model pack on the shared fixture photos, through the real native
// pipeline: recall on cat photos and false positives on no-cat photos at both cutoffs, by tag.
// `npm run eval:detector [-- --pack bc-v1] [--views plain,half_flip]` prints Markdown.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadAddon, type DetectorView } from '../native/addon';
import { loadPack } from '../models/pack';

interface PhotoEntry {
  file: string;
  group: 'cat' | 'nocat';
  tag: string;
  box: [number, number, number, number] | null;
}

function iou(a: number[], b: number[]): number {
  const w = Math.max(0, Math.min(a[2]!, b[2]!) - Math.max(a[0]!, b[0]!));
  const h = Math.max(0, Math.min(a[3]!, b[3]!) - Math.max(a[1]!, b[1]!));
  const inter = w * h;
  return inter / ((a[2]! - a[0]!) * (a[3]! - a[1]!) + (b[2]! - b[0]!) * (b[3]! - b[1]!) - inter);
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { pack: { type: 'string', default: 'bc-v1' }, views: { type: 'string' } } });
  const repo = path.resolve(__dirname, '../../..');
  const photos = path.resolve(repo, process.env.CATCOMFORT_SHARED_DIR ?? '../shared', 'fixtures/photos');
  const entries = (JSON.parse(readFileSync(path.join(photos, 'manifest.json'), 'utf8')) as { images: PhotoEntry[] }).images;
  const addon = loadAddon();
  addon.configure({ providers: ['cpu'], deviceId: 0, trtCacheDir: os.tmpdir(), trtFp16: false, poolThreads: os.availableParallelism(), intraOpThreads: 1 });
  const pack = await loadPack(path.join(repo, 'models', values.pack!), {
    maxPixels: 40_000_000,
    batching: { maxBatchSize: 1, maxQueueDelayUs: 0, maxQueue: 1, maxInFlight: 1 },
    sessionBatch: 1,
  });
  if (values.views) pack.spec.detector.views = values.views.split(',') as DetectorView[];
  const pipeline = await addon.createPipeline(pack.spec);
  const { detected, lowConfidence } = pack.manifest.cutoffs;

  const rows: string[] = [];
  const byTag = new Map<string, { group: string; n: number; atDetected: number; atLow: number; iouSum: number; iouN: number }>();
  for (const entry of entries) {
    const [result] = await addon.analyze(pipeline, [{ data: readFileSync(path.join(photos, entry.file)), encoding: 'bytes' }]);
    if (!result || !result.ok) throw new Error(`${entry.file}: ${result && !result.ok ? result.message : 'no result'}`);
    const confidence = result.cat?.confidence ?? 0;
    const overlap = entry.box && result.cat ? iou(result.cat.box, entry.box) : null;
    const key = `${entry.group}/${entry.tag}`;
    const t = byTag.get(key) ?? { group: entry.group, n: 0, atDetected: 0, atLow: 0, iouSum: 0, iouN: 0 };
    t.n++;
    if (confidence >= detected) t.atDetected++;
    if (confidence >= lowConfidence) t.atLow++;
    if (overlap !== null && confidence >= lowConfidence) {
      t.iouSum += overlap;
      t.iouN++;
    }
    byTag.set(key, t);
    rows.push(`| ${entry.file} | ${key} | ${confidence.toFixed(3)} | ${overlap === null ? '-' : overlap.toFixed(2)} |`);
  }
  const views = pack.spec.detector.views.join(', ');
  console.log(`# Detector evaluation: pack ${values.pack}, views [${views}], ${entries.length} photos\n`);
  console.log(`Cat photos: share reaching the cutoff (recall). No-cat photos: share reaching it (false positives).\n`);
  console.log(`| group/tag | photos | >= ${detected} | >= ${lowConfidence} | mean IoU with manifest box (>= ${lowConfidence}) |`);
  console.log('|---|---|---|---|---|');
  const totals = { cat: [0, 0, 0], nocat: [0, 0, 0] } as Record<string, number[]>;
  for (const [key, t] of [...byTag.entries()].sort()) {
    console.log(`| ${key} | ${t.n} | ${t.atDetected}/${t.n} | ${t.atLow}/${t.n} | ${t.iouN ? (t.iouSum / t.iouN).toFixed(2) : '-'} |`);
    const total = totals[t.group]!;
    total[0]! += t.n;
    total[1]! += t.atDetected;
    total[2]! += t.atLow;
  }
  for (const group of ['cat', 'nocat']) {
    const [n, d, l] = totals[group]!;
    console.log(`| **${group} (all)** | ${n} | **${d}/${n}** | **${l}/${n}** | |`);
  }
  console.log(`\n| photo | group/tag | confidence | IoU |\n|---|---|---|---|\n${rows.join('\n')}`);
  addon.releasePipeline(pipeline);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
