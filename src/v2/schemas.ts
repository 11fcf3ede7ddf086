// v2 wire schemas (spec 2.1-2.3). The same TypeBox objects validate requests and
// generate the OpenAPI document, so the two cannot drift apart.
import { Type, type Static } from '@sinclair/typebox';

/** The range of a discomfort threshold (validate.ts words its 422 messages from it). */
export const THRESHOLD_RANGE = { minimum: 0, maximum: 1 } as const;

export const PredictRequest = Type.Object(
  {
    image: Type.String({
      minLength: 1,
      description:
        'Base64-encoded image (standard alphabet with padding). An optional `data:image/<type>;base64,` prefix is accepted. The decoded image must be 8-bit per channel.',
    }),
    threshold: Type.Optional(
      Type.Union([Type.Number(THRESHOLD_RANGE), Type.Null()], {
        description: "Discomfort threshold override, 0.0-1.0. Omitted or null: the model's default threshold.",
      }),
    ),
  },
  { $id: 'PredictRequest', description: 'Unknown fields are ignored.' },
);
export type PredictRequest = Static<typeof PredictRequest>;

const ModelInfo = Type.Object(
  {
    id: Type.String({ description: 'Model identifier, e.g. `bc-v1`' }),
    version: Type.String({ description: 'Service release version' }),
    pack_version: Type.String({ description: 'Version of the model pack that produced this answer (a canary answers with its own)' }),
  },
  { $id: 'ModelInfo' },
);

const Prediction = Type.Object(
  {
    label: Type.Union([Type.Literal('comfort'), Type.Literal('discomfort')], {
      description: '`discomfort` when `score` > `threshold`, otherwise `comfort`',
    }),
    score: Type.Number({ minimum: 0, maximum: 1, description: 'Probability of discomfort' }),
    threshold: Type.Number({ ...THRESHOLD_RANGE, description: 'Threshold applied to `score`' }),
  },
  { $id: 'Prediction' },
);

export const BoundingBox = Type.Object(
  { x_min: Type.Integer(), y_min: Type.Integer(), x_max: Type.Integer(), y_max: Type.Integer() },
  { $id: 'BoundingBox', description: 'Pixel coordinates in the original (EXIF-rotated) image' },
);

const Cat = Type.Object(
  {
    bounding_box: BoundingBox,
    detection_confidence: Type.Number({ minimum: 0, maximum: 1, description: 'Detector confidence for this cat' }),
  },
  { $id: 'Cat', description: 'Future versions may add attributes shaped as `{value, confidence}`; ignore unknown keys.' },
);

const ImageInfo = Type.Object({ width: Type.Integer(), height: Type.Integer() }, { $id: 'ImageInfo' });

export const Detection = Type.Union(
  [Type.Literal('detected'), Type.Literal('low_confidence'), Type.Literal('not_detected')],
  {
    $id: 'Detection',
    description:
      '`detected`: detector confidence >= 0.69 (classified); `low_confidence`: 0.5 <= confidence < 0.69; `not_detected`: below 0.5 or no candidate. Cutoffs come from the model pack.',
  },
);

export const PredictResponse = Type.Object(
  {
    request_id: Type.String({ description: 'Equals the `X-Request-ID` response header' }),
    model: ModelInfo,
    detection: Detection,
    prediction: Type.Union([Prediction, Type.Null()], { description: 'Non-null only when `detection` is `detected`' }),
    cat: Type.Union([Cat, Type.Null()], { description: 'Null when `not_detected`' }),
    image: ImageInfo,
  },
  { $id: 'PredictResponse' },
);
export type PredictResponse = Static<typeof PredictResponse>;

export const ErrorResponse = Type.Object(
  {
    request_id: Type.String(),
    error: Type.Object({
      code: Type.String({ description: 'Stable machine-readable code' }),
      message: Type.String({ description: 'Human-readable text; wording may change' }),
      details: Type.Record(Type.String(), Type.Unknown(), { description: 'Always `{}` when empty' }),
    }),
  },
  { $id: 'ErrorResponse' },
);

export const BackboneSummary = Type.Object(
  {
    name: Type.String({ description: '`imagenet-mobilenetv2` (ImageNet MobileNetV2 of the ONNX Model Zoo), or `detector:<stage>` for a head trained on a stage of the detector' }),
    file: Type.Union([Type.String(), Type.Null()], { description: 'The backbone file serving now; null when it is cut from the detector at load' }),
    sha256: Type.String(),
    precision: Type.Union([Type.Literal('int8'), Type.Literal('fp32'), Type.Null()], { description: 'int8 (QLinear) or fp32 (its float copy); null for a detector stage' }),
  },
  { $id: 'BackboneSummary' },
);

const ClassGroups = (what: string) =>
  Type.Record(Type.String(), Type.Array(Type.Union([Type.Integer(), Type.Array(Type.Integer(), { minItems: 2, maxItems: 2 })])), {
    description: `${what}: ImageNet classes (0-based) in named groups; an entry is a class or an inclusive [first, last] range`,
  });

export const VerifierSummary = Type.Object(
  {
    file: Type.Union([Type.String(), Type.Null()], { description: 'The network whose class probabilities the rule reads: the classifier backbone, one Run per crop' }),
    sha256: Type.String(),
    max_candidates: Type.Integer({ description: '`detected` candidates checked per photo, best first, before answering `low_confidence`' }),
    rule: Type.Object(
      {
        lookalike_classes: ClassGroups('Animals mistaken for cats'),
        max_lookalike_mass: Type.Number(),
        cat_classes: ClassGroups('Domestic cats'),
        dog_classes: ClassGroups('Dogs'),
      },
      {
        description:
          'A detected candidate is vetoed when the softmax probability of its crop summed over lookalike_classes exceeds max_lookalike_mass. ' +
          'Of the candidates passed, the first whose cat_classes mass is at least its dog_classes mass is reported, else the first.',
      },
    ),
  },
  { $id: 'VerifierSummary' },
);

export const ClassifierSummary = Type.Object(
  {
    trained: Type.Boolean({
      description: 'false: the untrained reference network, whose score is not a comfort signal; true: a head trained by `catcomfort train-head`',
    }),
    backbone: Type.Union([BackboneSummary, Type.Null()], { description: 'What the head sits on; null for a whole reference network' }),
    training: Type.Union(
      [
        Type.Object({
          trained_at: Type.String({ description: 'ISO 8601 UTC' }),
          base_pack: Type.String({ description: 'Pack (id@version) whose detector and backbone the head sits on' }),
          training_photos: Type.Integer(),
          validation_photos: Type.Integer(),
          validation_balanced_accuracy: Type.Number({ description: 'On the held-out photos, at `threshold` (chosen on them)' }),
          validation_auc: Type.Number(),
          threshold: Type.Number(),
        }),
        Type.Null(),
      ],
      { description: 'How the head was trained and how it did on held-out photos; null for the reference network' },
    ),
  },
  { $id: 'ClassifierSummary' },
);

const Precision = Type.Union([Type.Literal('int8'), Type.Literal('fp32')]);

export const DetectorSummary = Type.Object(
  {
    precision: Type.Union([Type.Literal('int8'), Type.Literal('fp32')], {
      description: 'Precision of the detector serving now (CATCOMFORT_PRECISION; default int8 on CPU where the pack has it and its int8 self-check passes on this CPU)',
    }),
    available_precisions: Type.Array(Precision, { description: 'Precisions the pack ships' }),
    precision_reason: Type.String({ description: 'Why this precision serves: the int8 self-check\'s verdict on this CPU, CATCOMFORT_PRECISION, or the provider' }),
  },
  { $id: 'DetectorSummary' },
);

const Role = Type.Union([Type.Literal('serving'), Type.Literal('standby'), Type.Literal('shadow'), Type.Literal('canary'), Type.Literal('previous')], {
  description: 'serving: answers requests; standby: loaded, idle; shadow: runs beside the serving version on `share` of requests (spare capacity only), results only compared; canary: answers `share` of requests; previous: served before, kept for a rollback',
});

export const VersionSummary = Type.Object(
  {
    pack_version: Type.String(),
    role: Role,
    share: Type.Number({ description: 'Share of requests a canary answers, or a shadow runs beside (0..1); 0 for the other roles' }),
    since: Type.String({ format: 'date-time', description: 'When it took this role' }),
  },
  { $id: 'VersionSummary' },
);

export const ModelSummary = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    version: Type.String({ description: 'Service release version, as `model.version` in predictions' }),
    pack_version: Type.String({ description: 'Version of the model pack (manifest)' }),
    default_threshold: Type.Number(),
    deprecated: Type.Boolean(),
    detector: DetectorSummary,
    classifier: ClassifierSummary,
    verifier: Type.Union([VerifierSummary, Type.Null()], { description: 'What decides that a detected candidate is a cat and not a look-alike; null when the pack has none' }),
    versions: Type.Array(VersionSummary, { description: 'The versions of this pack loaded now (at most two); the fields above describe the serving one' }),
  },
  { $id: 'ModelSummary' },
);

export const ModelList = Type.Object(
  { request_id: Type.String(), models: Type.Array(ModelSummary) },
  { $id: 'ModelList' },
);

const SessionBatch = Type.Object({
  batch: Type.Integer({ description: 'Batch size the ONNX Runtime session is run at' }),
  runs: Type.Integer({ description: 'Runs at this size' }),
  padRows: Type.Integer({ description: 'Zero rows that filled Runs up to this size' }),
  lowLoadRuns: Type.Integer({ description: 'Of `runs`, those of a lone image on the low-load session (more intra-op threads; batch 1, CPU only)' }),
});

const SizeTiming = Type.Object({
  batch: Type.Integer(),
  msPerImage: Type.Number({ description: 'Median Run time per image at warm-up, milliseconds' }),
  kept: Type.Boolean({ description: 'Whether this size is run (false: dropped, its session released)' }),
});

const HostMemory = Type.Union([Type.Literal('pinned'), Type.Literal('cpu')]);

const Batching = Type.Object(
  {
    maxBatchSize: Type.Integer({ description: 'Images per micro-batch at most' }),
    maxQueueDelayUs: Type.Integer({ description: 'Longest wait of the oldest queued image before its batch closes, microseconds' }),
    maxQueue: Type.Integer({ description: 'Queued images at most; past it 429' }),
    maxInFlight: Type.Integer({ description: 'Micro-batches running at once' }),
    poolThreads: Type.Integer({ description: "Threads of the addon's pool (CATCOMFORT_POOL_THREADS)" }),
    chosenBy: Type.String({ description: 'settings, cpu rule, or gpu rule (N cores), and whether the manifest overrides them (docs/gpu.md "How batching is chosen")' }),
  },
  { description: 'The batching in effect' },
);

const StageSummary = Type.Object({
  count: Type.Integer({ description: 'Observations since start' }),
  meanMs: Type.Number({ description: 'Mean of the last 2048, milliseconds' }),
  p50Ms: Type.Number(),
  p99Ms: Type.Number(),
});

const Stages = Type.Partial(
  Type.Object({
    read: StageSummary,
    queue: StageSummary,
    decode: StageSummary,
    detect: StageSummary,
    crop: StageSummary,
    classify: StageSummary,
    loop: StageSummary,
    convert: StageSummary,
  }),
  { description: 'Where the time goes, per stage (the Server-Timing names; docs/performance.md "Where the time goes"): per image for queue to loop, per HTTP request for read and convert' },
);

const ModelStats = Type.Object(
  {
    submitted: Type.Integer({ description: 'Requests given to the micro-batcher' }),
    completed: Type.Integer({ description: 'Requests answered by the pipeline' }),
    batches: Type.Integer({ description: 'Micro-batches run' }),
    batchSizes: Type.Array(Type.Integer(), { description: 'Index n: number of micro-batches of size n' }),
    queueTimeUsTotal: Type.Number({ description: 'Sum of queue waits, microseconds' }),
    queueTimeUsMax: Type.Number({ description: 'Longest queue wait, microseconds' }),
    rejectedFull: Type.Integer({ description: 'Refused with 429: queue full' }),
    expired: Type.Integer({ description: 'Refused with 429: deadline could not be met' }),
    aborted: Type.Integer({ description: 'Dropped because the client went away' }),
    queued: Type.Integer({ description: 'Waiting now' }),
    inFlight: Type.Integer({ description: 'Running now' }),
    batching: Batching,
    stages: Stages,
    precision: Precision,
    precisionReason: Type.String({ description: 'Why this precision serves (as GET /v2/models detector.precision_reason)' }),
    cpuFeatures: Type.Array(Type.String(), { description: 'The CPU\'s vector features that decide how int8 runs (AVX2, AVX-512, AVX-512 VNNI, AVX-VNNI, AMX-INT8)' }),
    sessionBatches: Type.Object({ detector: Type.Array(SessionBatch), classifier: Type.Array(SessionBatch) }),
    lowLoad: Type.Object(
      {
        threads: Type.Integer({ description: 'Intra-op threads of the low-load sessions (CATCOMFORT_LOW_LOAD_THREADS); 1: none' }),
        maxInFlight: Type.Integer({ description: 'Analyses running at most for a lone image to take them (CATCOMFORT_LOW_LOAD_IN_FLIGHT)' }),
      },
      { description: 'When one request spreads over idle cores (docs/performance.md "Low load"); sessionBatches.*.lowLoadRuns counts the Runs that did' },
    ),
    sessionBatchTimings: Type.Object(
      { detector: Type.Array(SizeTiming), classifier: Type.Array(SizeTiming) },
      { description: 'Each session batch size timed at warm-up on the warm-up photo: median Run time per image, and whether it was kept (a size stays only when it costs at most 0.9x per image of the best smaller size kept)' },
    ),
    hostMemory: Type.Object(
      { detector: HostMemory, classifier: HostMemory },
      { description: "Where each session's inputs are staged and outputs land: pinned (the GPU provider's page-locked host memory) or cpu" },
    ),
    versions: Type.Array(
      Type.Object({ pack_version: Type.String(), role: Role, share: Type.Number(), submitted: Type.Integer(), completed: Type.Integer(), queued: Type.Integer(), inFlight: Type.Integer() }),
      { description: 'Each loaded version of this pack with its own counters since it was loaded; the counters above are the serving version\'s' },
    ),
  },
  { $id: 'ModelStats' },
);

const EventLoop = Type.Object(
  {
    utilization: Type.Union([Type.Number(), Type.Null()], { description: 'Busy share of the event loop over the last window (0..1); null before the first window ends' }),
    mainThreadUsPerRequest: Type.Union([Type.Integer(), Type.Null()], { description: 'Main-thread CPU microseconds per request answered (HTTP and gRPC) in the last window; null without requests' }),
    gcShare: Type.Union([Type.Number(), Type.Null()], { description: "The garbage collector's pauses as a share of the main thread's CPU time in the last window (0..1); null before the first window ends" }),
    windowS: Type.Number({ description: 'The window, seconds' }),
    busySeconds: Type.Number({ description: 'Event loop busy seconds since start' }),
    mainThreadCpuSeconds: Type.Union([Type.Number(), Type.Null()], { description: 'Main-thread CPU seconds since start (null where /proc does not say)' }),
    gcSeconds: Type.Number({ description: 'Seconds the garbage collector held the main thread since start' }),
    requests: Type.Integer({ description: 'Requests answered since start (HTTP and gRPC)' }),
  },
  { description: "The main thread's load (docs/performance.md \"Where the time goes\")" },
);

const SimulatedDevice = Type.Union(
  [
    Type.Object({
      profile: Type.String({ description: 'The device profile (bench/devices/NAME.json)' }),
      streams: Type.Integer(),
      runs: Type.Integer({ description: 'Simulated session Runs since start' }),
      busyMs: Type.Number({ description: 'Milliseconds with at least one stream busy' }),
      elapsedMs: Type.Number(),
    }),
    Type.Null(),
  ],
  { description: 'SIMULATED DEVICE (CATCOMFORT_BENCH_SIMULATE, benchmarks and tests only: every answer is the warm-up photo\'s); null when the networks really run' },
);

export const StatsResponse = Type.Object(
  {
    request_id: Type.String(),
    simulatedDevice: SimulatedDevice,
    eventLoop: EventLoop,
    models: Type.Record(Type.String(), ModelStats, { description: 'Counters since start, by model id' }),
  },
  { $id: 'StatsResponse' },
);
