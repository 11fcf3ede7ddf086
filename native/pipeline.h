// One model pack: the detector and classifier sessions (native/session.h) plus the spec, shared by all threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "decode.h"
#include "decoder.h"
#include "geometry.h"
#include "items.h"
#include "runtime.h"
#include "session.h"
#include "specs.h"

namespace catcomfort {

// sessionBatches(): each stage's batch sizes and their counters.
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

// A simulated decode (Pipeline::Simulate): the recorded image's sizes and view placements, which
// every item then gets.
struct SimulatedDecode {
  std::atomic<bool> armed{false};
  std::atomic<bool> on{false};
  std::mutex mutex;
  const SimulatedDevice* device = nullptr;
  int sourceWidth = 0, sourceHeight = 0, width = 0, height = 0, shrink = 1;
  Placement placements[4];
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

  // Benchmarks only (simulated_device.h): from the next real Run of each stage on, its Runs are
  // simulated on `device` and answer that Run's first image's outputs. With `decode`, from the next
  // analysis's first image that decodes on, decoding waits the profile's decodeHostMs instead and
  // every image is that one (its size and view placements; its pixels are never needed again, as
  // simulated Runs read no input).
  void Simulate(SimulatedDevice& device, bool decode) const;

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
  // The stage's sessions (native/session.h).
  const ModelSession& Stage(SessionStage stage) const;

  PipelineSpec spec_;
  mutable SimulatedDecode simulatedDecode_;
  std::unique_ptr<const DetectorDecoder> decoder_;  // picked by spec_.detector.output.format
  ModelSession detector_;
  ModelSession classifier_;
};

}  // namespace catcomfort
