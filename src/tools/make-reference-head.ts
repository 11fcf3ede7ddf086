// Writes models/bc-v1/head.json: the UNTRAINED reference comfort head of bc-v1. Its 1280 weights
// are pseudo-random numbers from a fixed seed (no data, no labels, no training), so its score
// varies from crop to crop but says nothing about comfort. It lets the whole path (backbone
// features, head, batching, output) run and be tested until an operator trains a head with
// `catcomfort train-head`. Deterministic: the same bytes on every run.
//
//   node dist/src/tools/make-reference-head.js [--out models/bc-v1/head.json]
//
// SCALE and BIAS were chosen once so that the cat crops of ../shared/fixtures/photos get scores
// spread over (0, 1) rather than all near 0.5; the photos are not an input of this tool.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { encodeHead, FEATURES } from '../graphs/imagenet/head';
import { sha256 } from '../hash';
import { seededRandom } from '../train/evaluate';

const SEED = 1002;
const SCALE = 3.2;
const BIAS = -1.44;

/** Standard normal numbers by the Box-Muller transform. */
function normals(count: number, seed: number): Float64Array {
  const next = seededRandom(seed);
  const out = new Float64Array(count);
  for (let i = 0; i < count; i += 2) {
    const r = Math.sqrt(-2 * Math.log(1 - next()));
    const theta = 2 * Math.PI * next();
    out[i] = r * Math.cos(theta);
    if (i + 1 < count) out[i + 1] = r * Math.sin(theta);
  }
  return out;
}

export function referenceHead(): string {
  const weights = normals(FEATURES, SEED).map((g) => (SCALE * g) / Math.sqrt(FEATURES));
  return encodeHead({ weights, bias: BIAS });
}

if (require.main === module) {
  const { values } = parseArgs({ options: { out: { type: 'string', default: path.resolve(__dirname, '../../../models/bc-v1/head.json') } } });
  const text = referenceHead();
  writeFileSync(values.out!, text);
  process.stdout.write(`${values.out}: ${text.length} bytes, sha256 ${sha256(Buffer.from(text))}\n`);
}
