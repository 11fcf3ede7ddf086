// Plain C++ copies of the JS-side specs (see src/native/addon.ts). Filled on the JS thread,
// read-only afterwards, so pool threads never touch N-API values.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace catcomfort {

enum class ResizeMode { Letterbox, Stretch };
enum class Anchor { TopLeft, Center };
enum class ChannelOrder { Rgb, Bgr };
enum class Layout { Nchw, Nhwc };

struct PreprocessSpec {
  int width = 0;
  int height = 0;
  ResizeMode resize = ResizeMode::Letterbox;
  Anchor anchor = Anchor::TopLeft;
  double padValue = 0;
  ChannelOrder channelOrder = ChannelOrder::Rgb;
  Layout layout = Layout::Nchw;
  double scale = 1;
  std::array<double, 3> mean{0, 0, 0};
  std::array<double, 3> std{1, 1, 1};
};

enum class DetectorView { Plain, Flip, Half, HalfFlip };
// How the views' top scores make the item's score: the best view ("max"), or the least sure view
// ("min": a cat only where every view sees one).
enum class ViewCombine { Max, Min };

// The manifest's `detector.output` block, kept generic so that the decoder of each format reads
// and checks its own settings (native/decoder.h): `format` selects the decoder; every other field
// is flattened, nested objects as dotted keys ("anchors.minScale"), numbers, booleans (1 / 0) and
// number arrays into `numbers`, strings into `strings`.
struct OutputSpec {
  std::string format;
  std::map<std::string, std::vector<double>> numbers;
  std::map<std::string, std::string> strings;

  // Accessors for decoders; each throws std::runtime_error naming the key when it is missing or
  // does not have the asked shape.
  const std::vector<double>& Numbers(const std::string& key) const;
  double Number(const std::string& key) const;
  int Int(const std::string& key, int min, int max) const;
  std::vector<int> Ints(const std::string& key, int min, int max) const;
  bool Bool(const std::string& key) const;
  const std::string& String(const std::string& key) const;
};

struct DetectorSpec {
  std::vector<uint8_t> model;
  PreprocessSpec preprocess;
  OutputSpec output;
  double scoreFloor = 0;
  double nmsIou = 0.45;
  std::vector<DetectorView> views;
  ViewCombine viewCombine = ViewCombine::Max;
  std::vector<std::pair<double, double>> calibration;
};

// The verifier (manifest `verifier`): a rule over the crop network's class probabilities that
// decides whether a detected candidate is a cat: it is vetoed when the probability mass on the
// look-alike classes exceeds maxLookalikeMass. Of the candidates it passes, the first whose cat
// mass is at least its dog mass is reported (a cat beside a dog), else the first.
struct VerifierSpec {
  bool enabled = false;
  int probsOutput = 1;    // the classifier session output holding the class probabilities
  int maxCandidates = 1;  // detected candidates checked per item, best first
  std::vector<int> lookalikeClasses;
  double maxLookalikeMass = 1;
  std::vector<int> catClasses;
  std::vector<int> dogClasses;
};

struct ClassifierSpec {
  std::vector<uint8_t> model;
  PreprocessSpec preprocess;
  double cropMargin = 0;
  int64_t outputIndex = 0;  // the discomfort probability's index in the session's first output
  int embeddingOutput = -1;  // >= 0: each classified item also gets this output's row (ItemResult.output)
  VerifierSpec verifier;
};

// The low-load session (src/packs/runtime.ts lowLoadFor decides it: CPU only). threads > 1: each
// stage gets a second batch-1 session with this many intra-op threads, which a lone image's Run
// takes while at most maxInFlight analyses (of every pipeline) are running; 1: none.
struct LowLoadSpec {
  int threads = 1;
  int maxInFlight = 1;
};

struct PipelineSpec {
  DetectorSpec detector;
  ClassifierSpec classifier;
  // Calibrated-confidence cutoffs (manifest `cutoffs`): `detected` items are classified.
  double detectedCutoff = 0;
  double lowConfidenceCutoff = 0;
  uint64_t maxPixels = 0;
  int maxSessionBatch = 1;
  bool jpegShrinkOnLoad = true;  // false: every JPEG decoded at full size (the bench's before/after)
  LowLoadSpec lowLoad;
};

enum class ProviderKind { TensorRt, Cuda, Cpu };

struct NativeConfig {
  std::vector<ProviderKind> providers;
  int deviceId = 0;
  std::string trtCacheDir;
  bool trtFp16 = false;
  std::string cudnnConvAlgoSearch = "HEURISTIC";  // CUDA provider option cudnn_conv_algo_search
  bool pinnedMemory = true;  // stage session tensors in the GPU provider's pinned memory (host_memory.h)
  int poolThreads = 1;
  int intraOpThreads = 1;
  bool cpuArena = false;  // ONNX Runtime's CPU memory arena; off: tensors from the process's allocator
};

struct ProviderStatus {
  std::string name;
  bool active = false;
  std::string reason;  // empty when active
};

struct NativeInfo {
  std::string vipsVersion;
  std::string ortVersion;
  std::vector<ProviderStatus> providers;
  // malloc_policy.h: the malloc serving the process, and what the service set of glibc's.
  std::string mallocAllocator;
  std::size_t mallocOwnMappingBytes = 0;
  int mallocArenaMax = 0;
};

}  // namespace catcomfort
