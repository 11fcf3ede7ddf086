// catcomfort train-head: trains the comfort head on the operator's labelled photos and writes a
// model pack the service loads like any other.
//
//   catcomfort train-head --data DIR|CSV --out PACK_DIR [--base bc-v1] [--id ID] [--backbone imagenet]
//                         [--stage conv-1280] [--size 224] [--seed 1] [--validation-fraction 0.25]
//                         [--cache DIR] [--force]
//
// Exit codes: 0 pack written, 1 training failed, 2 bad arguments or data. Progress on stderr, the
// result on stdout.
import path from 'node:path';
import { parseArgs } from 'node:util';
import { modelsDirFrom } from '../config';
import type { TrainingManifest } from '../packs/manifest';
import { readManifest } from '../packs/pack';
import { BACKBONE_KINDS, buildBackbone, imagenetBackbone, isStage, STAGES, type Backbone, type BackboneKind, type StageName } from '../train/backbone';
import { composeClassifier } from '../train/compose';
import { DatasetError, LABEL_NAMES, readDataset } from '../train/dataset';
import { defaultCacheDir, embedPhotos } from '../train/embed';
import { fitHead } from '../train/fit-head';
import { modelCard } from '../train/model-card';
import { writePack } from '../train/pack-writer';

const repoRoot = path.resolve(__dirname, '../../..');

/** Chosen on the proxy task (docs/training.md "Proof on a proxy task"). */
export const DEFAULT_BACKBONE: BackboneKind = 'imagenet';
export const DEFAULT_STAGE: StageName = 'conv-1280';
export const DEFAULT_SIZE = 224;

const USAGE = `Usage: catcomfort train-head --data DIR|CSV --out PACK_DIR [options]

Trains the comfort head on your labelled photos and writes a model pack.

  --data DIR|CSV             a folder with comfort/ and discomfort/ folders of photos, or a CSV file
                             of path,label lines (label comfort, discomfort, 0 or 1; paths relative
                             to the CSV)
  --out PACK_DIR             the pack folder to write (its name is the pack id unless --id); put it
                             in the service's models folder (CATCOMFORT_MODELS_DIR) to serve it
  --base ID|DIR              pack whose detector, cutoffs and crop are used (default bc-v1)
  --id ID                    pack id (default: the name of PACK_DIR). A new version of a serving pack
                             has its id: --id bc-v1 --version 1.3.0 --out models/bc-v1@1.3.0
                             (docs/packs.md "Rolling out a pack")
  --version V                pack version (default 1.0.0)
  --backbone ${BACKBONE_KINDS.join('|').padEnd(15)} imagenet (default): the base pack's ImageNet MobileNetV2 features;
                             the pack written holds only the head (a few KB) and takes the
                             other files from the base pack, which must sit beside it.
                             detector: a stage of the base pack's SSD detector (--stage, --size);
                             the pack holds its own classifier and detector files, no verifier
  --stage ${Object.keys(STAGES).join('|').padEnd(18)} detector backbone stage (default ${DEFAULT_STAGE})
  --size N                   detector backbone crop size in pixels (default ${DEFAULT_SIZE})
  --seed N                   seed of the train/validation split and folds (default 1)
  --validation-fraction F    share of each class held out (default 0.25)
  --cache DIR                embedding cache (default ${defaultCacheDir()})
  --force                    replace PACK_DIR if it exists
  --help                     this text
`;

class UsageError extends Error {}

function integer(name: string, text: string, min: number, max: number): number {
  const n = Number(text);
  if (!/^-?\d+$/.test(text) || n < min || n > max) throw new UsageError(`--${name} must be an integer from ${min} to ${max}, got "${text}"`);
  return n;
}

function parse(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    options: {
      data: { type: 'string' },
      out: { type: 'string' },
      base: { type: 'string', default: 'bc-v1' },
      id: { type: 'string' },
      version: { type: 'string', default: '1.0.0' },
      backbone: { type: 'string', default: DEFAULT_BACKBONE },
      stage: { type: 'string' },
      size: { type: 'string' },
      seed: { type: 'string', default: '1' },
      'validation-fraction': { type: 'string', default: '0.25' },
      cache: { type: 'string' },
      force: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) return null;
  if (!values.data) throw new UsageError('--data is required');
  if (!values.out) throw new UsageError('--out is required');
  const backbone = values.backbone as BackboneKind;
  if (!BACKBONE_KINDS.includes(backbone)) throw new UsageError(`--backbone must be one of ${BACKBONE_KINDS.join(', ')}`);
  if (backbone === 'imagenet' && (values.stage !== undefined || values.size !== undefined)) {
    throw new UsageError('--stage and --size choose a detector stage: they need --backbone detector');
  }
  const stage = values.stage ?? DEFAULT_STAGE;
  if (!isStage(stage)) throw new UsageError(`--stage must be one of ${Object.keys(STAGES).join(', ')}`);
  const fraction = Number(values['validation-fraction']);
  if (!(fraction > 0 && fraction < 1)) throw new UsageError('--validation-fraction must be a number between 0 and 1');
  const out = path.resolve(values.out);
  const id = values.id ?? path.basename(out);
  if (!/^[a-z0-9][a-z0-9-]{0,63}$/.test(id)) {
    throw new UsageError(`pack id "${id}" must be lower-case letters, digits and dashes (at most 64); name PACK_DIR so or give --id`);
  }
  if (!/^[0-9A-Za-z][0-9A-Za-z.+-]{0,63}$/.test(values.version!)) {
    throw new UsageError(`--version "${values.version}" must be letters, digits, dots, plus and dashes (at most 64), e.g. 1.3.0`);
  }
  const base = values.base!;
  return {
    data: path.resolve(values.data),
    out,
    id,
    version: values.version!,
    baseDir: base.includes('/') || base.includes(path.sep) ? path.resolve(base) : path.join(modelsDirFrom(process.env), base),
    backbone,
    stage,
    size: integer('size', values.size ?? String(DEFAULT_SIZE), 64, 640),
    seed: integer('seed', values.seed!, 0, 2 ** 31 - 1),
    fraction,
    cacheDir: path.resolve(values.cache ?? defaultCacheDir()),
    force: values.force!,
  };
}

function progressWriter(): (line: string, final: boolean) => void {
  const tty = process.stderr.isTTY === true;
  let last = 0;
  return (line, final) => {
    if (tty) process.stderr.write(`\r${line}${final ? '\n' : ''}`);
    else if (final || Date.now() - last > 2000) {
      process.stderr.write(`${line}\n`);
      last = Date.now();
    }
  };
}

export async function trainHead(argv: string[]): Promise<number> {
  let args: ReturnType<typeof parse>;
  try {
    args = parse(argv);
  } catch (error) {
    process.stderr.write(`train-head: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (args === null) {
    process.stdout.write(USAGE);
    return 0;
  }
  try {
    const photos = await readDataset(args.data);
    const base = await readManifest(args.baseDir);
    const backbone: Backbone = args.backbone === 'imagenet' ? imagenetBackbone(base) : buildBackbone(base, args.stage, args.size, repoRoot);
    process.stderr.write(`train-head: ${photos.length} photos; base pack ${base.id} ${base.version}; backbone ${backbone.stage} at ${backbone.inputSize} px, ${backbone.kind === 'imagenet' ? `int8 (${backbone.manifest.int8.file}, as the CPU service serves it)` : 'fp32'}\n`);
    const embedded = await embedPhotos(photos, { baseDir: args.baseDir, backbone, cacheDir: args.cacheDir, progress: progressWriter() });
    const skipped = embedded.flatMap((e) => ('skipped' in e ? [{ file: path.relative(process.cwd(), e.photo.file), reason: e.skipped }] : []));
    for (const s of skipped) process.stderr.write(`skipped ${s.file}: ${s.reason}\n`);
    const usable = embedded.flatMap((e) => ('embedding' in e ? [e] : []));
    process.stderr.write(`fitting the head on ${usable.length} photos (cross-validating the L2 strength)...\n`);
    const labels = usable.map((e) => e.photo.label);
    const fit = fitHead(usable.map((e) => e.embedding), labels, { seed: args.seed, validationFraction: args.fraction });
    const count = (indices: number[]) => ({
      comfort: indices.filter((i) => labels[i] === 0).length,
      discomfort: indices.filter((i) => labels[i] === 1).length,
    });
    const training: TrainingManifest = {
      tool: 'catcomfort train-head',
      trainedAt: new Date().toISOString(),
      basePack: `${base.id}@${base.version}`,
      backbone: { stage: backbone.stage, inputSize: backbone.inputSize, sha256: backbone.sha256 },
      seed: args.seed,
      validationFraction: args.fraction,
      l2: fit.cv.lambda,
      cvFolds: fit.cv.folds,
      counts: { train: count(fit.trainIndices), validation: count(fit.validationIndices), skipped: skipped.length },
      validation: {
        balancedAccuracy: fit.balancedAccuracy,
        balancedAccuracyAtHalf: fit.balancedAccuracyAtHalf,
        auc: fit.auc,
        threshold: fit.threshold,
        confusion: fit.confusion,
      },
    };
    const classifier =
      backbone.kind === 'imagenet'
        ? ({ kind: 'head', head: fit.head } as const)
        : ({ kind: 'network', onnx: composeClassifier(backbone, fit.head, `catcomfort train-head: ${args.stage} ${args.size} px backbone of ${base.id} + logistic head`) } as const);
    const manifest = await writePack({
      base,
      baseDir: args.baseDir,
      outDir: args.out,
      id: args.id,
      version: args.version,
      classifier,
      backbone,
      threshold: fit.threshold,
      training,
      card: (m) => modelCard({ manifest: m, training, cv: fit.cv, data: args.data, skipped }),
      force: args.force,
    });
    const v = training.validation;
    process.stdout.write(
      `pack ${manifest.id} written to ${args.out}\n` +
        `  ${LABEL_NAMES[0]}/${LABEL_NAMES[1]}: training ${training.counts.train.comfort}/${training.counts.train.discomfort}, ` +
        `validation ${training.counts.validation.comfort}/${training.counts.validation.discomfort}, skipped ${skipped.length}\n` +
        `  L2 ${training.l2} (${training.cvFolds}-fold CV); validation balanced accuracy ${(v.balancedAccuracy * 100).toFixed(1)} % ` +
        `at threshold ${v.threshold.toFixed(4)}, ${(v.balancedAccuracyAtHalf * 100).toFixed(1)} % at 0.5, AUC ${v.auc.toFixed(3)} (trivial baseline 50 %)\n`,
    );
    return 0;
  } catch (error) {
    process.stderr.write(`\ntrain-head: ${(error as Error).message}\n`);
    return error instanceof DatasetError ? 2 : 1;
  }
}

if (require.main === module) {
  trainHead(process.argv.slice(2)).then(
    (code) => (process.exitCode = code),
    (error: unknown) => {
      process.stderr.write(`train-head: ${String(error)}\n`);
      process.exitCode = 1;
    },
  );
}
