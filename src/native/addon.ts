// The native surface, declared once. Manifests and options are validated in TypeScript
// (src/packs/manifest.ts, src/config/index.ts); the addon copies these shapes into plain structs,
// checking only their JS types at the boundary.
import path from 'node:path';
import { createRequire } from 'node:module';
import type { DetectorOutputManifest } from './detector-output';
import type { DeviceProfile } from './device-profile';

/** How the `data` of an item is encoded. */
export type ItemEncoding =
  | 'base64-strict' // v2: standard alphabet, exact padding, optional `data:image/<type>;base64,` prefix
  | 'base64-lenient' // v1: like Python's b64decode(validate=False): skips characters outside the alphabet
  | 'bytes'; // raw file bytes (URL fetches, video frames)

export interface AnalyzeItem {
  data: string | Buffer;
  encoding: ItemEncoding;
  /** Also report every candidate the detector proposed (ItemSuccess.proposals); default false. */
  explain?: boolean;
}

/**
 * Stable codes of per-item failures. The addon returns codes only; the texts clients see are
 * TypeScript's, one table per interface (src/pipeline/analysis.ts for v2 and scans, src/v1/respond.ts).
 */
export type ItemErrorCode = 'invalid_base64' | 'empty_image' | 'undecodable' | 'unsupported_format' | 'too_many_pixels' | 'internal';

/** Which of CPython 3.11's errors a lenient (v1) base64 decode would raise. */
export type Base64Reason = 'non_ascii' | 'data_characters' | 'incorrect_padding';

export interface ItemFailure {
  ok: false;
  code: ItemErrorCode;
  /** Lenient base64 only. */
  reason?: Base64Reason;
  /** reason 'data_characters': the number of data characters. */
  dataCharacters?: number;
  /** code 'internal' only: what failed, for logs (never for clients). */
  internal?: string;
}

/** A failure in a few words, for logs and tool output (never a client's answer). */
export function describeFailure(failure: ItemFailure): string {
  return [failure.code, failure.reason, failure.internal].filter((part) => part !== undefined).join(': ');
}

/** The one decision of what was found: PipelineSpec.cutoffs applied to the reported confidence. */
export type DetectionState = 'detected' | 'low_confidence' | 'not_detected';

export interface CatCandidate {
  /** [x_min, y_min, x_max, y_max] in original-image integer pixels, clamped to the image. */
  box: [number, number, number, number];
  /** Calibrated detector confidence in [0, 1], rounded to 6 decimals (the value clients see). */
  confidence: number;
  /**
   * Uncalibrated score: the views' top scores combined by viewCombine (best view, or least sure view);
   * each is the format's cat probability (YOLOX objectness * class, SSD sigmoid of the cat logit).
   */
  rawScore: number;
}

export interface ItemSuccess {
  ok: true;
  width: number;
  height: number;
  /** Best cat over all views, or null when no candidate scored above the detector floor. */
  cat: CatCandidate | null;
  detection: DetectionState;
  /** Classifier output (probability of discomfort, 6 decimals), only when `detected`. */
  score: number | null;
  /**
   * With a verifier, for `detected` items and those it vetoed (`low_confidence`): its reading of
   * the reported candidate's crop, and how many candidates it checked.
   */
  verification?: Verification;
  /** AnalyzeItem.explain only: every candidate of the best view after NMS, best first; absent when none. */
  proposals?: Proposal[];
  /** The row of ClassifierSpec.embeddingOutput, only when `score` is set. */
  output?: Float32Array;
  /**
   * Wall milliseconds of each stage of the analysis (micro-batch) this item ran in, shared by its
   * items; the four stages add up to analyzeMs (src/timing/stage-times.ts names them).
   */
  timings: { decodeMs: number; detectMs: number; cropMs: number; classifyMs: number; analyzeMs: number };
}

export type ItemResult = ItemSuccess | ItemFailure;

/** What became of a proposal; the pipeline decides it (native/pipeline.cc PickCandidates, ChooseCats). */
export type ProposalOutcome = 'chosen' | 'below_low_confidence_cutoff' | 'below_detected_cutoff' | 'vetoed_lookalike' | 'another_chosen';

/** A candidate the detector proposed, with the verifier's reading of its crop where it read one. */
export interface Proposal extends CatCandidate {
  verification: Verification | null;
  outcome: ProposalOutcome;
}

export interface PreprocessSpec {
  width: number;
  height: number;
  /** letterbox keeps aspect ratio and pads; stretch resizes to exactly width x height. */
  resize: 'letterbox' | 'stretch';
  /** Where a letterboxed image sits on the canvas. */
  anchor: 'top-left' | 'center';
  padValue: number;
  channelOrder: 'rgb' | 'bgr';
  layout: 'nchw' | 'nhwc';
  /** value' = (value * scale - mean[c]) / std[c], per channel in channelOrder order. */
  scale: number;
  mean: [number, number, number];
  std: [number, number, number];
}

export type DetectorView = 'plain' | 'flip' | 'half' | 'half_flip';

/**
 * The manifest's `detector.output` block as it stands: `format` picks the native decoder
 * (native/decoder.cc: 'yolox', 'ssd'), which reads the rest. Unknown formats or settings reject
 * createPipeline.
 */
export type DetectorOutput = DetectorOutputManifest;

export interface DetectorSpec {
  model: Buffer;
  preprocess: PreprocessSpec;
  output: DetectorOutput;
  /** Candidates below this raw score are dropped before NMS. */
  scoreFloor: number;
  nmsIou: number;
  views: DetectorView[];
  /**
   * How the views' top scores make the item's raw score: 'max' = the best view; 'min' = the least
   * sure view (a cat only where every view sees one). The box is the best-scoring view's either way.
   */
  viewCombine: 'max' | 'min';
  /** Monotone piecewise-linear map raw -> calibrated, as [raw, calibrated] knots; empty = identity. */
  calibration: Array<[number, number]>;
}

export interface Verification {
  /** Probability mass on VerifierSpec.lookalikeClasses, catClasses, dogClasses; 6 decimals. */
  lookalikeMass: number;
  catMass: number;
  dogMass: number;
  passed: boolean;
  checked: number;
}

/**
 * The rule that decides whether a detected candidate is a cat, over the class probabilities of
 * its crop (the classifier session's output `probsOutput`): it is vetoed when the mass on
 * lookalikeClasses exceeds maxLookalikeMass. Up to maxCandidates `detected` candidates are
 * checked, best first; of those it passes, the first with catMass >= dogMass is reported, else
 * the first.
 */
export interface VerifierSpec {
  probsOutput: number;
  maxCandidates: number;
  lookalikeClasses: number[];
  maxLookalikeMass: number;
  catClasses: number[];
  dogClasses: number[];
}

export interface ClassifierSpec {
  model: Buffer;
  preprocess: PreprocessSpec;
  /** Extra margin around the detected box, as a fraction of its width/height, before cropping. */
  cropMargin: number;
  /** Index of the discomfort probability in the session's first output. */
  outputIndex: number;
  /** Each classified item also returns this session output's row (train-head reads embeddings so). */
  embeddingOutput?: number;
  verifier?: VerifierSpec;
}

export interface PipelineSpec {
  detector: DetectorSpec;
  classifier: ClassifierSpec;
  /** Calibrated-confidence cutoffs of `detection`; the classifier runs on `detected` items. */
  cutoffs: { detected: number; lowConfidence: number };
  /** Decoding stops before pixel data when width * height exceeds this. */
  maxPixels: number;
  /**
   * Largest batch handed to one ORT Run (views count: 2 images x 4 views = 8). Runs are padded with
   * zero-filled rows up to the next of a few fixed sizes (powers of two below it, then it).
   */
  maxSessionBatch: number;
  /**
   * Decode JPEGs at 1/2, 1/4 or 1/8 of their size when the models need no more (native/pipeline.cc
   * states the rule); sizes and boxes stay in source pixels. false: full-size decodes (for comparison).
   */
  jpegShrinkOnLoad: boolean;
  /** The low-load sessions (src/packs/runtime.ts lowLoadFor decides them); absent: none. */
  lowLoad?: LowLoadSessions;
}

/**
 * threads > 1: each stage also gets a batch-1 session with this many intra-op threads, which a lone
 * image's Run takes while at most `maxInFlight` analyses (of every pipeline) run; 1: none.
 */
export interface LowLoadSessions {
  threads: number;
  maxInFlight: number;
}

export interface NativeConfig {
  /** Ordered execution providers to try; 'cpu' is always added last. */
  providers: Array<'tensorrt' | 'cuda' | 'cpu'>;
  deviceId: number;
  trtCacheDir: string;
  trtFp16: boolean;
  /** CUDA provider option `cudnn_conv_algo_search`; default HEURISTIC. */
  cudnnConvAlgoSearch?: CudnnConvAlgoSearch;
  /** Stage session tensors in the GPU provider's pinned host memory when it offers it (default true). */
  pinnedMemory?: boolean;
  /** Threads in the addon's own pool (decode, preprocess, session runs). */
  poolThreads: number;
  /** ORT intra-op threads per session run. */
  intraOpThreads: number;
  /** ONNX Runtime's CPU memory arena for session tensors (default false: the process's allocator). */
  cpuArena?: boolean;
}

/** How cuDNN picks convolution algorithms: benchmark all (slow first Run per shape), its heuristics, or one fixed. */
export type CudnnConvAlgoSearch = 'EXHAUSTIVE' | 'HEURISTIC' | 'DEFAULT';

export interface ProviderStatus {
  name: string;
  active: boolean;
  /**
   * Why it was skipped; null when active. GPU providers are tried with the classic append first,
   * then (libonnxruntime built without them) as a plugin EP library beside the addon, so the
   * reason is usually the plugin's load error, e.g. "libcudart.so.13: cannot open shared object file".
   */
  reason: string | null;
}

export interface NativeInfo {
  vipsVersion: string;
  ortVersion: string;
  providers: ProviderStatus[];
  /** The malloc serving the process: jemalloc when bin/catcomfort-service preloaded it (the two parts below are then 0), else glibc's (native/malloc_policy.h). */
  mallocAllocator: 'jemalloc' | 'glibc' | 'other';
  /** Blocks from this size get mappings of their own (native/malloc_policy.cc: ours, or the environment's); 0: glibc's own rule, or one set in GLIBC_TUNABLES. */
  mallocOwnMappingBytes: number;
  /** The most arenas glibc's malloc gives threads (ours, or MALLOC_ARENA_MAX); 0: glibc's own, or one set in GLIBC_TUNABLES. */
  mallocArenaMax: number;
  /** Set by configureAddon (src/packs/runtime.ts), not by native: the simulated device's profile, when one is. */
  simulatedDevice?: DeviceProfile;
}

/** The simulated device's counters since it was set (native/simulated_device.h). */
export interface SimulatedDeviceStats {
  profile: string;
  streams: number;
  runs: number;
  /** Time with at least one stream busy. */
  busyMs: number;
  elapsedMs: number;
}

/** Opaque handle owning the two ORT sessions of one model pack. */
export interface NativePipeline {
  readonly __brand: 'NativePipeline';
}

export interface NativeAddon {
  configure(config: NativeConfig): NativeInfo;
  createPipeline(spec: PipelineSpec): Promise<NativePipeline>;
  analyze(pipeline: NativePipeline, items: AnalyzeItem[]): Promise<ItemResult[]>;
  /** Releases the sessions; later analyze calls on it reject. */
  releasePipeline(pipeline: NativePipeline): void;
  /**
   * Warm-up (and micro-benchmarks): one Run of the stage's session of `batch` images (one of its
   * session batch sizes) on a zero-filled input, or with `row` (one image's input tensor) in every
   * row; resolves to its milliseconds.
   */
  runSession(pipeline: NativePipeline, stage: SessionStage, batch: number, row?: Float32Array): Promise<number>;
  /**
   * Keeps only these batch sizes of a stage (its smallest always stays), releasing the other
   * sizes' sessions; for the warm-up, before the pipeline takes requests.
   */
  keepSessionBatches(pipeline: NativePipeline, stage: SessionStage, sizes: number[]): void;
  /** The batch sizes each session is run at, with the Runs analyze() made of each so far. */
  sessionBatches(pipeline: NativePipeline): Record<SessionStage, SessionBatch[]>;
  /**
   * Where each session's inputs are staged and outputs land: `pinned`, the GPU provider's
   * page-locked host memory (copies to and from the device by DMA); `cpu`, plain memory.
   */
  hostMemory(pipeline: NativePipeline): Record<SessionStage, HostMemory>;
  /**
   * The strict (v2) base64 decoder the pipeline uses (standard alphabet, exact padding, optional
   * `data:image/<type>;base64,` prefix), synchronous: the bytes, or the failure's code.
   */
  decodeBase64Strict(text: string): Buffer | 'invalid_base64' | 'empty_image';
  /**
   * Tools and tests (not the request path): one Run of any ONNX model whose inputs and outputs
   * are float32, on the addon's pool, with the configured providers; the session is created and
   * dropped per call. Resolves to every model output, in the model's order.
   */
  runModel(model: Buffer, inputs: FloatTensor[]): Promise<FloatTensor[]>;
  /**
   * Tools and tests: decodes an image file and resolves to the tensor of its plain view under
   * `spec` as the pipeline makes the detector input (same resize and tensor fill; decoded at full
   * size, where the pipeline may decode a large JPEG shrunk).
   */
  preprocessImage(image: Buffer, spec: PreprocessSpec): Promise<PreprocessedImage>;
  /**
   * Tools and tests: the pipeline's decoder for `detector.output` run on the model outputs of one
   * image (batch dimension 1, in the model's output order): every cat candidate at or above
   * scoreFloor, in canvas (model input) pixels, in the decoder's order, before NMS.
   */
  decodeDetections(detector: Pick<DetectorSpec, 'preprocess' | 'output' | 'scoreFloor'>, outputs: FloatTensor[]): Promise<DecodedDetection[]>;
  /** A second descriptor (close-on-exec) of the same open file or socket: the HTTP front's threads each own one of the listening socket. */
  dupFd(fd: number): number;
  /** Bytes that have arrived on a socket and are not read yet (FIONREAD): the gRPC server looks before it writes an answer. */
  pendingInputBytes(fd: number): number;
  /**
   * Gives back to the system the pages of malloc's free blocks in every arena (glibc's
   * malloc_trim(0), native/malloc_policy.h), on the addon's pool; resolves to the process's resident
   * bytes before and after, and its milliseconds. Elsewhere than glibc it only measures.
   */
  trimFreePages(): Promise<TrimOutcome>;
  /** The pool of image-sized blocks (decoded photos, resized views, base64-decoded files: native/image_blocks.h) since the process started. */
  imageBlocks(): ImageBlockCounts;
  /** Detaches `buffer`: its memory is freed now (when nothing else shares it), and every view of it reads as empty. Only for memory nothing reads any more (src/native/own-memory.ts). */
  releaseArrayBuffer(buffer: ArrayBuffer): void;
  /** jemalloc's own account of its memory, refreshed at each call; null under another malloc (native/malloc_policy.h). */
  mallocBytes(): MallocBytes | null;
  /** The simulated device's counters, or null when this process simulates none (always with this binding). */
  simulatedDevice(): SimulatedDeviceStats | null;
}

export type SessionStage = 'detector' | 'classifier';

export interface ImageBlockCounts {
  /** Blocks handed out. */
  taken: number;
  /** Of those, idle blocks handed out again (the rest were new mappings). */
  reused: number;
  /** Blocks kept for the next request (at most 64 MiB; more are unmapped). */
  idleBytes: number;
  /** Blocks mapped now, idle and in use. */
  mappedBytes: number;
}

/** Bytes by jemalloc's account. */
export interface MallocBytes {
  /** In blocks handed out. */
  allocated: number;
  /** In pages holding such blocks. */
  active: number;
  /** In free pages kept resident until they decay. */
  dirty: number;
  /** In pages resident, jemalloc's metadata included. */
  resident: number;
  /** In address space kept but given back to the system. */
  retained: number;
}

export interface TrimOutcome {
  residentBeforeBytes: number;
  residentAfterBytes: number;
  ms: number;
}

export type HostMemory = 'pinned' | 'cpu';

export interface SessionBatch {
  batch: number;
  runs: number;
  /** Zero-filled rows that filled those Runs up to `batch`. */
  padRows: number;
  /** Of `runs`, those the low-load session made (batch 1 only). */
  lowLoadRuns: number;
}

export interface DecodedDetection {
  /** [x1, y1, x2, y2] in canvas pixels (not clipped). */
  box: [number, number, number, number];
  score: number;
}

export interface PreprocessedImage {
  /** Size of the decoded image. */
  width: number;
  height: number;
  /** [1, 3, H, W] (nchw) or [1, H, W, 3] (nhwc). */
  tensor: FloatTensor;
}

export interface FloatTensor {
  name: string;
  dims: number[];
  data: Float32Array;
}

export interface BenchDecodeTiming {
  ok: boolean;
  decodeMs: number;
  preprocessMs: number;
}

/** The micro-benchmark binding (build/Release/catcomfort_bench.node): the service's surface plus benchDecode. */
export interface BenchAddon extends NativeAddon {
  /**
   * Decode + detector preprocessing (resize and tensor fill of every view) of each item,
   * item-parallel on the addon's pool; no session runs. Failed items have ok false.
   */
  benchDecode(pipeline: NativePipeline, items: AnalyzeItem[]): Promise<BenchDecodeTiming[]>;
  /**
   * Benchmarks and tests only: sets the process's simulated device (one profile per process) and,
   * from the next real Run of each of the pipeline's stages on, simulates them on it, answering
   * that Run's first image's outputs. With `decode`, from the next analysis's first decoded image
   * on, decoding waits the profile's decodeHostMs instead and every image is that one.
   */
  simulate(pipeline: NativePipeline, profile: DeviceProfile, decode: boolean): void;
}

const requireFromHere = createRequire(__filename);
const release = path.resolve(__dirname, '../../../build/Release');
/** Which binding this process loaded; a process loads one of the two, never both. */
let loaded: 'service' | 'bench' | null = null;
let benchProcess = false;

function load<A extends NativeAddon>(binding: 'service' | 'bench'): A {
  if (loaded !== null && loaded !== binding) throw new Error(`this process already loaded the ${loaded} binding; it cannot load the ${binding} one too`);
  loaded = binding;
  return requireFromHere(path.join(release, binding === 'service' ? 'catcomfort.node' : 'catcomfort_bench.node')) as A;
}

/** Benchmarks and tests (CATCOMFORT_BENCH_SIMULATE): loadAddon gives this process the bench binding; before any binding is loaded. */
export function useBenchBinding(): void {
  if (loaded === 'service') throw new Error('CATCOMFORT_BENCH_SIMULATE needs the bench binding, but the service binding is already loaded');
  benchProcess = true;
}

/** The process's binding: the service's, or the bench one after useBenchBinding. */
export function loadAddon(): NativeAddon {
  return load(benchProcess ? 'bench' : 'service');
}

/** The bench binding (micro-benchmarks, simulated devices). */
export function loadBenchAddon(): BenchAddon {
  return load<BenchAddon>('bench');
}
