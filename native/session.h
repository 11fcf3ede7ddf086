// The ONNX Runtime sessions of one pipeline stage (detector or classifier): opening them from the
// model bytes, one session per batch size with its input shape fixed; Runs bound to the sessions'
// host memory (IoBinding), padded up to a session's size, on input tensors kept between Runs; and
// the low-load session a lone image may take on CPU. What the images are is the pipeline's
// business (native/pipeline.cc); this file knows tensors, sizes and Runs only.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <onnxruntime_cxx_api.h>

#include "host_memory.h"
#include "runtime.h"
#include "simulated_device.h"
#include "specs.h"
#include "thread_pool.h"

namespace catcomfort {

// One of the few batch sizes a stage is run at: its own session, which sees this one input shape
// for its whole life (since ONNX Runtime 1.20 a CUDA Conv keeps the cuDNN plan of its last input
// shape only, so a session whose shape changes between Runs rebuilds plans), with what the
// pipeline's Runs made of it.
struct SessionBatch {
  int64_t size = 0;
  Ort::Session* session = nullptr;  // owned by ModelSession::sessions; null once dropped
  // Dropped by KeepBatches (a size that did not pay at warm-up): Runs go to the other sizes.
  mutable std::atomic<bool> dropped{false};
  mutable std::atomic<uint64_t> runs{0};
  mutable std::atomic<uint64_t> padRows{0};  // zero-filled rows added to fill Runs up to `size`
  mutable std::atomic<uint64_t> lowLoadRuns{0};  // of `runs`, those made by ModelSession::lowLoad
  // Input tensors of this size in the session's host memory, kept between Runs (one per Run in flight).
  mutable std::mutex idleMutex;
  mutable std::vector<Ort::Value> idleInputs;
};

// A stage on the simulated device (simulated_device.h), benchmarks only: once armed, the next real
// Run records one image's outputs; from then on every Run of the stage waits the device profile's
// time instead of running the session, and every image of it answers the recorded outputs.
struct SimulatedStage {
  std::atomic<bool> armed{false};
  std::atomic<bool> on{false};
  std::mutex mutex;
  SimulatedDevice* device = nullptr;
  const StageCost* cost = nullptr;
  std::vector<std::vector<float>> rows;      // one image's outputs, per fetched output
  std::vector<std::vector<int64_t>> shapes;  // their per-image shapes
  // Per batch size, every row the recorded one (read only, shared by the Runs' output tensors).
  std::map<int64_t, std::vector<std::vector<float>>> filled;
};

// Members are destroyed in reverse order: the kept inputs before their allocator, that before the
// sessions, those before the prepacked weights they share.
struct ModelSession {
  std::unique_ptr<Ort::PrepackedWeightsContainer> prepacked;  // weights prepacked once for every size
  mutable std::vector<std::unique_ptr<Ort::Session>> sessions;  // one per batch size, in `batches` order
  // Batch 1 with LowLoadSpec::threads intra-op threads (null when off): a lone image's Run while at
  // most lowLoadInFlight analyses are running.
  std::unique_ptr<Ort::Session> lowLoad;
  int lowLoadInFlight = 0;
  HostMemory host;  // where inputs are staged and outputs land (set by OpenSession)
  std::string inputName;
  std::vector<std::string> outputNames;  // the first N outputs, in the model's order
  int64_t fixedBatch = 0;  // > 0: the model's input batch dimension is fixed at this size
  std::string batchDim;    // the input's symbolic batch dimension, fixed per session
  // Ascending; a Run of n images is padded up to the smallest that holds n. A fixed batch: that
  // size only; else the powers of two below the session batch, then the session batch itself.
  std::vector<SessionBatch> batches;
  std::unique_ptr<SimulatedStage> simulated = std::make_unique<SimulatedStage>();
};

// A batch size still in use, with its counters (sessionBatches()).
struct SessionBatchCount {
  int64_t size = 0;
  uint64_t runs = 0;
  uint64_t padRows = 0;
  uint64_t lowLoadRuns = 0;
};

// Items [first, first + count) of a stage's Run; `alone`: the stage's only Run of an analysis of one image.
struct Chunk {
  size_t first = 0;
  size_t count = 0;
  bool alone = false;
};

struct OutputData {
  const float* data = nullptr;
  std::vector<int64_t> shape;  // per image: the batch dimension dropped
  size_t perImage = 0;         // floats per batch entry
};

struct BatchOutput {
  std::vector<Ort::Value> values;
  std::vector<OutputData> outputs;  // one per fetched output, in the session's outputNames order
  double runMs = 0;  // the session Run alone
};

// Counts one Analyze call for as long as it lives: what the low-load sessions look at.
class AnalysisInFlight {
 public:
  AnalysisInFlight();
  ~AnalysisInFlight();
  AnalysisInFlight(const AnalysisInFlight&) = delete;
  AnalysisInFlight& operator=(const AnalysisInFlight&) = delete;
};

// Opens a stage's sessions and checks the input against the preprocess spec; they will fetch the
// model's first `outputs` outputs, whose per-image shapes go to *outputShapes when given. Frees
// `model`. Throws std::exception on an invalid model.
ModelSession OpenSession(const Runtime& runtime, std::vector<uint8_t>& model, const PreprocessSpec& spec, int maxSessionBatch,
                         const LowLoadSpec& lowLoad, const char* what, size_t outputs = 1,
                         std::vector<std::vector<int64_t>>* outputShapes = nullptr);

// The low-load session's first Run (its allocations), on zeros, before traffic arrives.
void WarmLowLoad(const ModelSession& model, const PreprocessSpec& spec);

// One Run on `count` images whose tensors `fill(i, dst)` writes (see session.cc).
BatchOutput RunBatch(const ModelSession& model, const PreprocessSpec& spec, size_t count, bool alone, ThreadPool& pool,
                     const std::function<void(size_t, float*)>& fill);

// `run(chunk)` over `total` items in chunks of the model's largest size in use, the chunks
// concurrently on the pool. A chunk is `alone` when it is the only one of an analysis of one image.
void ForEachChunk(const ModelSession& model, size_t total, bool oneImage, ThreadPool& pool, const std::function<void(const Chunk&)>& run);

// The milliseconds of one bound Run of the `batch` session on zeros, or `row` in every row (the
// warm-up and the micro-benchmarks); `what` names the stage in errors.
double TimeRun(const ModelSession& model, const PreprocessSpec& spec, const std::string& what, int64_t batch, const std::vector<float>& row);

// Benchmarks only: the stage's next real Run records its first image's outputs, and every Run after
// it is simulated on `device` at `cost` (see SimulatedStage).
void SimulateOn(const ModelSession& model, SimulatedDevice& device, const StageCost& cost);

// Keeps only these batch sizes (the smallest always stays) and releases the others' sessions.
void KeepBatches(const ModelSession& model, const std::vector<int64_t>& sizes);

// The batch sizes still in use, with their counters.
std::vector<SessionBatchCount> Counts(const ModelSession& model);

}  // namespace catcomfort
