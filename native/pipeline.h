// One model pack: the detector and classifier sessions plus the spec, shared by all threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <onnxruntime_cxx_api.h>

#include "decoder.h"
#include "host_memory.h"
#include "items.h"
#include "runtime.h"
#include "specs.h"

namespace catcomfort {

// One of the few batch sizes a stage is run at: its own session, which sees this one input shape
// for its whole life (since ONNX Runtime 1.20 a CUDA Conv keeps the cuDNN plan of its last input
// shape only, so a session whose shape changes between Runs rebuilds plans), with what the
// pipeline's Runs made of it.
struct SessionBatch {
  int64_t size = 0;
  Ort::Session* session = nullptr;  // owned by ModelSession::sessions; null once dropped
  // Dropped by KeepSessionBatches (a size that did not pay at warm-up): Runs go to the other sizes.
  mutable std::atomic<bool> dropped{false};
  mutable std::atomic<uint64_t> runs{0};
  mutable std::atomic<uint64_t> padRows{0};  // zero-filled rows added to fill Runs up to `size`
  mutable std::atomic<uint64_t> lowLoadRuns{0};  // of `runs`, those made by ModelSession::lowLoad
  // Input tensors of this size in the session's host memory, kept between Runs (one per Run in flight).
  mutable std::mutex idleMutex;
  mutable std::vector<Ort::Value> idleInputs;
};

// Members are destroyed in reverse order: the kept inputs before their allocator, that before the
// sessions, those before the prepacked weights they share.
struct ModelSession {
  std::unique_ptr<Ort::PrepackedWeightsContainer> prepacked;  // weights prepacked once for every size
  mutable std::vector<std::unique_ptr<Ort::Session>> sessions;  // one per batch size, in `batches` order
  // Batch 1 with the config's lowLoadThreads intra-op threads (CPU only; null when off): a lone
  // image's Run while at most lowLoadInFlight analyses are running.
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
};

// sessionBatches(): each stage's batch sizes and their counters.
struct SessionBatchCount {
  int64_t size = 0;
  uint64_t runs = 0;
  uint64_t padRows = 0;
  uint64_t lowLoadRuns = 0;
};

struct SessionBatchCounts {
  std::vector<SessionBatchCount> detector;
  std::vector<SessionBatchCount> classifier;
};

// benchDecode(): per-item decode and detector preprocessing times, no session runs.
struct DecodeTiming {
  bool ok = false;
  double decodeMs = 0;
  double preprocessMs = 0;  // resize + tensor fill for every view
};

enum class SessionStage { Detector, Classifier };

// Items [first, first + count) of a stage's Run; `alone`: the stage's only Run of an analysis of one image.
struct Chunk {
  size_t first = 0;
  size_t count = 0;
  bool alone = false;
};

class Pipeline {
 public:
  // Builds the detector's output decoder (native/decoder.h) and both sessions from the spec's
  // model bytes (which are freed afterwards).
  // Throws std::exception (Ort::Exception, std::runtime_error) on invalid models or specs.
  static std::shared_ptr<Pipeline> Create(PipelineSpec spec, const Runtime& runtime);

  // Per-item failures become failed ItemResults; throws only for whole-call failures
  // (a session run failing, a model output that does not match the spec).
  std::vector<ItemResult> Analyze(const std::vector<ItemInput>& items, ThreadPool& pool) const;

  // Micro-benchmarks (tinybench): decode + detector preprocessing of every view, item-parallel;
  // and one Run of a stage on a zero-filled input of `batch` images, in the session's host memory
  // and bound as analyze() binds its Runs, returning its milliseconds (throws unless `batch` is one
  // of the stage's session batch sizes).
  std::vector<DecodeTiming> BenchDecode(const std::vector<ItemInput>& items, ThreadPool& pool) const;
  // `row`, when not empty, is one image's input tensor written into every row instead of zeros.
  double BenchSession(SessionStage stage, int64_t batch, const std::vector<float>& row) const;
  // Keeps only these batch sizes of a stage (the smallest always stays) and releases the others'
  // sessions; for the warm-up, before the pipeline takes requests.
  void KeepSessionBatches(SessionStage stage, const std::vector<int64_t>& sizes) const;

  // The batch sizes each session is run at, with the Runs analyze() made of each so far.
  SessionBatchCounts SessionBatches() const;
  // Whether the stage's session stages inputs and outputs in the GPU provider's pinned memory.
  bool PinnedHostMemory(SessionStage stage) const;

 private:
  // Analyze's steps, in the order it calls them (pipeline.cc), sharing one AnalyzeState.
  struct AnalyzeState;
  // Decodes every item and prepares its detector content, item-parallel.
  void PrepareItems(const std::vector<ItemInput>& items, AnalyzeState& a, ThreadPool& pool) const;
  // One detector pass over every (item, view), chunked by the session batch.
  void DetectViews(AnalyzeState& a, ThreadPool& pool) const;
  // One detector Run over a chunk of the jobs and their kept boxes.
  void DetectChunk(AnalyzeState& a, const Chunk& chunk, ThreadPool& pool) const;
  // Per item: the best view's top box and the views' scores combined.
  void CombineViews(AnalyzeState& a) const;
  // Best cat per item, its detection state, and the candidates for the classifier.
  void PickCandidates(AnalyzeState& a) const;
  // Decodes the file again, finer, where a cat's crop is too small at the first decode's scale.
  void RedecodeSmallCats(const std::vector<ItemInput>& items, AnalyzeState& a, ThreadPool& pool) const;
  // The classifier (and verifier) over every candidate's crop, chunked by the session batch.
  void ClassifyCrops(AnalyzeState& a, ThreadPool& pool) const;
  // One classifier Run over a chunk of the crops.
  void ClassifyChunk(AnalyzeState& a, const Chunk& chunk, ThreadPool& pool) const;
  // Per classified item, the candidate that answers and its score.
  void ChooseCats(AnalyzeState& a) const;
  // The analysis's stage times on each item that succeeded.
  static void StampTimings(AnalyzeState& a, double analyzeMs);
  // Every item's result, in input order.
  static std::vector<ItemResult> TakeResults(AnalyzeState& a);

  PipelineSpec spec_;
  std::unique_ptr<const DetectorDecoder> decoder_;  // picked by spec_.detector.output.format
  ModelSession detector_;
  ModelSession classifier_;
};

}  // namespace catcomfort
