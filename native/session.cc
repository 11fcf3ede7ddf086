// The stage sessions of native/session.h: the batch sizes and their sessions, Runs bound to the
// sessions' host memory, the input tensors each size keeps, and the low-load session's choice.
#include "session.h"

#include <algorithm>
#include <stdexcept>

#include "clock.h"

namespace catcomfort {

namespace {

// Analyze calls running in this process, of every pipeline: what the low-load sessions look at.
std::atomic<int> g_analysesInFlight{0};

std::vector<int64_t> InputShape(const PreprocessSpec& spec, size_t batch) {
  const int64_t n = static_cast<int64_t>(batch);
  return spec.layout == Layout::Nchw ? std::vector<int64_t>{n, 3, spec.height, spec.width}
                                     : std::vector<int64_t>{n, spec.height, spec.width, 3};
}

// A zero-filled input tensor of `shape` in the session's host memory.
Ort::Value NewInput(const ModelSession& model, const std::vector<int64_t>& shape) {
  Ort::Value input = Ort::Value::CreateTensor<float>(model.host.Allocator(), shape.data(), shape.size());
  float* data = input.GetTensorMutableData<float>();
  std::fill(data, data + input.GetTensorTypeAndShapeInfo().GetElementCount(), 0.0f);
  return input;
}

// One Run of `bucket`'s session on `input` (its size of images) with the outputs bound to the
// session's host memory (pinned on a GPU: host_memory.h); checks that every output is a float32
// tensor of that batch.
BatchOutput RunBound(const ModelSession& model, const SessionBatch& bucket, const Ort::Value& input, Ort::Session& session) {
  const size_t batch = static_cast<size_t>(bucket.size);
  Ort::IoBinding binding(session);
  binding.BindInput(model.inputName.c_str(), input);
  for (const std::string& name : model.outputNames) binding.BindOutput(name.c_str(), model.host.Info());
  session.Run(Ort::RunOptions{nullptr}, binding);
  BatchOutput out;
  out.values = binding.GetOutputValues();
  if (out.values.size() != model.outputNames.size()) throw std::runtime_error("model returned too few outputs");
  for (Ort::Value& value : out.values) {
    if (!value.IsTensor()) throw std::runtime_error("model returned no tensor");
    auto info = value.GetTensorTypeAndShapeInfo();
    if (info.GetElementType() != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) throw std::runtime_error("model output must be float32");
    OutputData o;
    o.shape = info.GetShape();
    const size_t total = info.GetElementCount();
    if (o.shape.empty() || o.shape[0] != static_cast<int64_t>(batch) || total % batch != 0) {
      throw std::runtime_error("model output batch does not match its input batch");
    }
    o.shape.erase(o.shape.begin());
    o.perImage = total / batch;
    o.data = value.GetTensorData<float>();
    out.outputs.push_back(std::move(o));
  }
  return out;
}

// An input kept from an earlier Run of the bucket's size, else a new one; zero-filled either way.
Ort::Value TakeInput(const ModelSession& model, const SessionBatch& bucket, const PreprocessSpec& spec) {
  {
    std::lock_guard<std::mutex> lock(bucket.idleMutex);
    if (!bucket.idleInputs.empty()) {
      Ort::Value input = std::move(bucket.idleInputs.back());
      bucket.idleInputs.pop_back();
      return input;
    }
  }
  return NewInput(model, InputShape(spec, static_cast<size_t>(bucket.size)));
}

// Back for the next Run of its size, its first `written` rows zeroed again (the rows after them
// were never written).
void KeepInput(const SessionBatch& bucket, Ort::Value input, size_t written, size_t slot) {
  float* data = input.GetTensorMutableData<float>();
  std::fill(data, data + written * slot, 0.0f);
  std::lock_guard<std::mutex> lock(bucket.idleMutex);
  bucket.idleInputs.push_back(std::move(input));
}

// After a real Run of an armed stage: its first image's outputs kept, and the stage simulated from now on.
void Record(const ModelSession& model, const BatchOutput& out) {
  SimulatedStage& sim = *model.simulated;
  std::lock_guard<std::mutex> lock(sim.mutex);
  if (sim.on.load(std::memory_order_relaxed)) return;
  for (const OutputData& o : out.outputs) {
    sim.rows.emplace_back(o.data, o.data + o.perImage);
    sim.shapes.push_back(o.shape);
  }
  sim.on.store(true, std::memory_order_release);
}

// A simulated Run of `bucket`'s size: the device's time, then tensors over rows that all hold the
// recorded image's outputs (made once per size, never written after).
BatchOutput SimulatedRun(const ModelSession& model, const SessionBatch& bucket) {
  SimulatedStage& sim = *model.simulated;
  const Clock::time_point start = Clock::now();
  sim.device->Run(*sim.cost, bucket.size);
  const size_t batch = static_cast<size_t>(bucket.size);
  std::vector<std::vector<float>>* filled = nullptr;
  {
    std::lock_guard<std::mutex> lock(sim.mutex);
    auto found = sim.filled.find(bucket.size);
    if (found == sim.filled.end()) {
      std::vector<std::vector<float>> rows;
      for (const std::vector<float>& row : sim.rows) {
        std::vector<float> all;
        all.reserve(row.size() * batch);
        for (size_t i = 0; i < batch; ++i) all.insert(all.end(), row.begin(), row.end());
        rows.push_back(std::move(all));
      }
      found = sim.filled.emplace(bucket.size, std::move(rows)).first;
    }
    filled = &found->second;
  }
  static const Ort::MemoryInfo cpu = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
  BatchOutput out;
  for (size_t o = 0; o < filled->size(); ++o) {
    std::vector<float>& data = (*filled)[o];
    std::vector<int64_t> shape = sim.shapes[o];
    shape.insert(shape.begin(), bucket.size);
    out.values.push_back(Ort::Value::CreateTensor<float>(cpu, data.data(), data.size(), shape.data(), shape.size()));
    out.outputs.push_back({data.data(), sim.shapes[o], sim.rows[o].size()});
  }
  out.runMs = MsSince(start);
  return out;
}

// The largest size still in use.
size_t ChunkSize(const ModelSession& model) {
  for (auto b = model.batches.rbegin(); b != model.batches.rend(); ++b) {
    if (!b->dropped.load(std::memory_order_relaxed)) return static_cast<size_t>(b->size);
  }
  return 1;
}

}  // namespace

AnalysisInFlight::AnalysisInFlight() { g_analysesInFlight.fetch_add(1, std::memory_order_relaxed); }
AnalysisInFlight::~AnalysisInFlight() { g_analysesInFlight.fetch_sub(1, std::memory_order_relaxed); }

// Opens a stage's sessions and checks the input against the preprocess spec; they will fetch the
// model's first `outputs` outputs, whose per-image shapes (batch dimension dropped, symbolic dims
// -1) go to *outputShapes when given. Runs take at most maxSessionBatch images (a fixed batch:
// that). One session per batch size, each with the input's symbolic batch dimension fixed to its
// size (AddFreeDimensionOverrideByName; the smallest size keeps the first session, which only ever
// runs that size), so that no session ever sees two input shapes; they share one
// PrepackedWeightsContainer, so weights that kernels prepack are held once.
ModelSession OpenSession(const Runtime& runtime, std::vector<uint8_t>& model, const PreprocessSpec& spec, int maxSessionBatch,
                         const LowLoadSpec& lowLoad, const char* what, size_t outputs,
                         std::vector<std::vector<int64_t>>* outputShapes) {
  if (model.empty()) throw std::runtime_error(std::string(what) + " model is empty");
  ModelSession out;
  out.prepacked = std::make_unique<Ort::PrepackedWeightsContainer>();
  // The first session reads the model's declarations and serves the smallest size.
  auto open = [&](const std::string& dim, int64_t size, int threads = 0) {
    Ort::SessionOptions options = MakeSessionOptions(runtime, threads);
    if (!dim.empty()) options.AddFreeDimensionOverrideByName(dim.c_str(), size);
    return std::make_unique<Ort::Session>(*runtime.env, model.data(), model.size(), options, *out.prepacked);
  };
  std::unique_ptr<Ort::Session> first = open("", 0);
  Ort::Session& session = *first;
  if (session.GetInputCount() < 1 || session.GetOutputCount() < outputs) {
    throw std::runtime_error(std::string(what) + " model needs an input and " + std::to_string(outputs) +
                             (outputs == 1 ? " output" : " outputs"));
  }
  Ort::AllocatorWithDefaultOptions allocator;
  out.inputName = session.GetInputNameAllocated(0, allocator).get();
  for (size_t i = 0; i < outputs; ++i) {
    out.outputNames.push_back(session.GetOutputNameAllocated(i, allocator).get());
    if (outputShapes != nullptr) {
      std::vector<int64_t> shape = session.GetOutputTypeInfo(i).GetTensorTypeAndShapeInfo().GetShape();
      if (!shape.empty()) shape.erase(shape.begin());
      outputShapes->push_back(std::move(shape));
    }
  }

  Ort::TypeInfo inputType = session.GetInputTypeInfo(0);
  auto tensorInfo = inputType.GetTensorTypeAndShapeInfo();
  if (tensorInfo.GetElementType() != ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
    throw std::runtime_error(std::string(what) + " model input must be float32");
  }
  std::vector<int64_t> shape = tensorInfo.GetShape();
  if (shape.size() != 4) throw std::runtime_error(std::string(what) + " model input must have rank 4");
  const bool nchw = spec.layout == Layout::Nchw;
  const int64_t channels = nchw ? shape[1] : shape[3];
  const int64_t height = nchw ? shape[2] : shape[1];
  const int64_t width = nchw ? shape[3] : shape[2];
  if ((channels > 0 && channels != 3) || (height > 0 && height != spec.height) ||
      (width > 0 && width != spec.width)) {
    throw std::runtime_error(std::string(what) + " model input shape does not match its preprocess spec");
  }
  out.fixedBatch = shape[0] > 0 ? shape[0] : 0;
  std::vector<int64_t> sizes;
  if (out.fixedBatch > 0) {
    sizes.push_back(out.fixedBatch);
  } else {
    const char* dim = tensorInfo.GetSymbolicDimensions()[0];
    out.batchDim = dim != nullptr ? dim : "";
    if (out.batchDim.empty()) throw std::runtime_error(std::string(what) + " model input's batch dimension has no name to fix per session");
    const int64_t largest = std::max(1, maxSessionBatch);
    for (int64_t size = 1; size < largest; size *= 2) sizes.push_back(size);
    sizes.push_back(largest);
  }
  out.batches = std::vector<SessionBatch>(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    out.batches[i].size = sizes[i];
    out.sessions.push_back(i == 0 ? std::move(first) : open(out.batchDim, sizes[i]));
    out.batches[i].session = out.sessions.back().get();
  }
  // Only where the smallest size is 1 (a fixed batch above 1 has no lone Runs); the rule of when it
  // pays (CPU only) is the caller's (LowLoadSpec).
  if (lowLoad.threads > 1 && out.batches.front().size == 1) {
    out.lowLoad = open(out.batchDim, 1, lowLoad.threads);
    out.lowLoadInFlight = lowLoad.maxInFlight;
  }
  std::vector<uint8_t>().swap(model);  // each session keeps its own copy of what it needs
  out.host = HostMemory::For(runtime, *out.sessions.front());
  return out;
}

void WarmLowLoad(const ModelSession& model, const PreprocessSpec& spec) {
  if (model.lowLoad) RunBound(model, model.batches.front(), NewInput(model, InputShape(spec, 1)), *model.lowLoad);
}

// Runs the session on `count` images (at most the largest of model.batches) whose tensors
// `fill(slot, dst)` writes, padded with zero-filled rows up to the smallest batch size that holds
// them; the pad rows' outputs are never read. An image `alone` in its stage, while at most
// lowLoadInFlight analyses run, goes to the low-load session: it spreads over the idle cores.
BatchOutput RunBatch(const ModelSession& model, const PreprocessSpec& spec, size_t count, bool alone, ThreadPool& pool,
                     const std::function<void(size_t, float*)>& fill) {
  const auto holds = [count](const SessionBatch& b) { return !b.dropped.load(std::memory_order_relaxed) && b.size >= static_cast<int64_t>(count); };
  const auto found = std::find_if(model.batches.begin(), model.batches.end(), holds);
  if (found == model.batches.end()) throw std::runtime_error("more images than the session batch");
  const SessionBatch& bucket = *found;
  const size_t batch = static_cast<size_t>(bucket.size);
  if (count > batch) throw std::runtime_error("more images than the session batch");
  bucket.runs.fetch_add(1, std::memory_order_relaxed);
  bucket.padRows.fetch_add(batch - count, std::memory_order_relaxed);
  if (model.simulated->on.load(std::memory_order_acquire)) return SimulatedRun(model, bucket);
  const size_t slot = static_cast<size_t>(spec.width) * spec.height * 3;
  Ort::Value input = TakeInput(model, bucket, spec);
  float* data = input.GetTensorMutableData<float>();
  ParallelFor(pool, count, [&](size_t i) { fill(i, data + i * slot); });
  const bool lowLoad = alone && batch == 1 && model.lowLoad && g_analysesInFlight.load(std::memory_order_relaxed) <= model.lowLoadInFlight;
  if (lowLoad) bucket.lowLoadRuns.fetch_add(1, std::memory_order_relaxed);
  const Clock::time_point runStart = Clock::now();
  BatchOutput out = RunBound(model, bucket, input, lowLoad ? *model.lowLoad : *bucket.session);
  out.runMs = MsSince(runStart);
  KeepInput(bucket, std::move(input), count, slot);
  if (model.simulated->armed.load(std::memory_order_relaxed)) Record(model, out);
  return out;
}

void ForEachChunk(const ModelSession& model, size_t total, bool oneImage, ThreadPool& pool, const std::function<void(const Chunk&)>& run) {
  const size_t size = ChunkSize(model);
  const size_t chunks = (total + size - 1) / size;
  ParallelFor(pool, chunks, [&](size_t c) {
    const size_t first = c * size;
    run({first, std::min(size, total - first), oneImage && chunks == 1});
  });
}

double TimeRun(const ModelSession& model, const PreprocessSpec& spec, const std::string& what, int64_t batch, const std::vector<float>& row) {
  if (batch < 1 || batch > 1024) throw std::runtime_error("batch must be between 1 and 1024");
  if (model.fixedBatch > 0 && batch != model.fixedBatch) {
    throw std::runtime_error(what + " model has a fixed batch of " + std::to_string(model.fixedBatch) + ", not " + std::to_string(batch));
  }
  const auto bucket = std::find_if(model.batches.begin(), model.batches.end(),
                                   [batch](const SessionBatch& b) { return b.size == batch && !b.dropped.load(std::memory_order_relaxed); });
  if (bucket == model.batches.end()) {
    std::string sizes;
    for (const SessionBatchCount& b : Counts(model)) sizes += (sizes.empty() ? "" : ", ") + std::to_string(b.size);
    throw std::runtime_error(what + " has no session for batch " + std::to_string(batch) + " (its session batch sizes: " + sizes + ")");
  }
  const size_t slot = static_cast<size_t>(spec.width) * spec.height * 3;
  if (!row.empty() && row.size() != slot) {
    throw std::runtime_error(what + " input row must have " + std::to_string(slot) + " values, not " + std::to_string(row.size()));
  }
  if (model.simulated->on.load(std::memory_order_acquire)) return SimulatedRun(model, *bucket).runMs;
  Ort::Value input = NewInput(model, InputShape(spec, static_cast<size_t>(batch)));
  float* data = input.GetTensorMutableData<float>();
  if (!row.empty()) {
    for (int64_t i = 0; i < batch; ++i) std::copy(row.begin(), row.end(), data + static_cast<size_t>(i) * slot);
  }
  const Clock::time_point start = Clock::now();
  RunBound(model, *bucket, input, *bucket->session);
  return MsSince(start);
}

void SimulateOn(const ModelSession& model, SimulatedDevice& device, const StageCost& cost) {
  SimulatedStage& sim = *model.simulated;
  std::lock_guard<std::mutex> lock(sim.mutex);
  sim.device = &device;
  sim.cost = &cost;
  sim.armed.store(true, std::memory_order_release);
}

void KeepBatches(const ModelSession& model, const std::vector<int64_t>& sizes) {
  for (size_t i = 1; i < model.batches.size(); ++i) {
    const SessionBatch& b = model.batches[i];
    if (std::find(sizes.begin(), sizes.end(), b.size) != sizes.end() || b.dropped.load()) continue;
    b.dropped.store(true);
    {
      std::lock_guard<std::mutex> lock(b.idleMutex);
      b.idleInputs.clear();
    }
    model.sessions[i].reset();
  }
}

std::vector<SessionBatchCount> Counts(const ModelSession& model) {
  std::vector<SessionBatchCount> out;
  for (const SessionBatch& b : model.batches) {
    if (b.dropped.load(std::memory_order_relaxed)) continue;
    out.push_back({b.size, b.runs.load(std::memory_order_relaxed), b.padRows.load(std::memory_order_relaxed), b.lowLoadRuns.load(std::memory_order_relaxed)});
  }
  return out;
}

}  // namespace catcomfort
