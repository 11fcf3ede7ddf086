// The N-API surface (src/native/addon.ts): configure, createPipeline, analyze, releasePipeline,
// sessionBatches, keepSessionBatches and hostMemory (what a pipeline's sessions ran at, which sizes it keeps, where their tensors live),
// runSession (one Run at a batch size: the warm-up, and the micro-benchmarks), simulatedDevice (its
// counters, null unless simulated), benchDecode and simulate (only in catcomfort_bench.node, built
// with CATCOMFORT_BENCH_ENTRY_POINTS: the service's binding can never simulate a device), and runModel / preprocessImage /
// decodeDetections for tools and tests (native/tools.h), trimFreePages (native/malloc_policy.h) and
// imageBlocks (native/image_blocks.h), mallocBytes (native/malloc_policy.h), releaseArrayBuffer.
//
// JS values are copied into plain structs here, on the JS thread; the work runs on the addon's
// own pool with no N-API calls; results come back through a per-call thread-safe function and
// are converted on the JS thread. C++ exceptions become JS errors (code 'native_error') in one
// place: NativeError(), reached from the Sync/Async boundaries and from Deliver().
#include <cerrno>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <napi.h>

#include "base64.h"
#include "js_convert.h"
#include "js_convert_tools.h"
#include "js_read.h"
#include "image_blocks.h"
#include "malloc_policy.h"
#include "pipeline.h"
#include "tools.h"
#include "runtime.h"

namespace catcomfort {

namespace {

constexpr napi_type_tag kPipelineTag = {0x6361f0c0a7d14b2eULL, 0x9e3b5c2d8a41f6a7ULL};

// What a JS pipeline handle owns. release() drops the pipeline; calls already running keep
// their own shared_ptr until they finish.
struct PipelineHandle {
  std::mutex mutex;
  std::shared_ptr<const Pipeline> pipeline;

  std::shared_ptr<const Pipeline> Get() {
    std::lock_guard<std::mutex> lock(mutex);
    return pipeline;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mutex);
    pipeline.reset();
  }
};

// The one place a C++ failure turns into a JS error.
Napi::Error NativeError(Napi::Env env, const std::string& message) {
  Napi::Error error = Napi::Error::New(env, message.empty() ? "native error" : message);
  error.Set("code", Napi::String::New(env, "native_error"));
  return error;
}

std::string MessageOf(std::exception_ptr failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const Napi::Error& e) {
    return e.Message();
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown native error";
  }
}

// An async call: Work() runs on the pool, Settle() on the JS thread. The destructor must not
// use N-API (it may run on a pool thread when the environment is gone), so JS handles are raw
// and released explicitly in Deliver().
class Call {
 public:
  explicit Call(napi_deferred deferred) : deferred_(deferred) {}
  virtual ~Call() = default;
  virtual void Work() = 0;
  virtual Napi::Value Settle(Napi::Env env) = 0;

  napi_deferred deferred_;
  std::vector<napi_ref> refs_;  // Buffers kept alive for Work(); deleted on the JS thread
  std::string error_;
  bool failed_ = false;
};

void Deliver(Napi::Env env, Napi::Function, std::nullptr_t*, Call* raw);
using Completion = Napi::TypedThreadSafeFunction<std::nullptr_t, Call, Deliver>;

void Deliver(Napi::Env env, Napi::Function, std::nullptr_t*, Call* raw) {
  std::unique_ptr<Call> call(raw);
  if (env == nullptr) return;  // environment shutting down: nothing to settle, handles die with it
  try {
    for (napi_ref ref : call->refs_) napi_delete_reference(env, ref);
    call->refs_.clear();
    bool ok = !call->failed_;
    std::string message = call->error_;
    Napi::Value outcome;
    if (ok) {
      try {
        outcome = call->Settle(env);
      } catch (...) {
        ok = false;
        message = MessageOf(std::current_exception());
        if (env.IsExceptionPending()) env.GetAndClearPendingException();
      }
    }
    if (ok) {
      napi_resolve_deferred(env, call->deferred_, outcome);
    } else {
      napi_reject_deferred(env, call->deferred_, NativeError(env, message).Value());
    }
  } catch (...) {
    // Only reachable if V8 cannot allocate the error itself; nothing may escape into libuv.
    if (env.IsExceptionPending()) env.GetAndClearPendingException();
  }
}

// Runs call->Work() on the pool and settles its promise on the JS thread.
void Schedule(Napi::Env env, std::unique_ptr<Call> call) {
  Runtime* runtime = GetRuntime();
  Completion completion = Completion::New(env, "catcomfort", 0, 1);
  Call* raw = call.release();
  try {
    const bool queued = runtime->pool->Submit([raw, completion]() mutable {
      try {
        raw->Work();
      } catch (...) {
        raw->failed_ = true;
        raw->error_ = MessageOf(std::current_exception());
      }
      if (completion.BlockingCall(raw) != napi_ok) delete raw;  // environment gone
      completion.Release();
    });
    if (!queued) throw std::runtime_error("the addon's thread pool was shut down");
  } catch (...) {
    completion.Release();
    delete raw;
    throw;
  }
}

Runtime& RequireRuntime() {
  Runtime* runtime = GetRuntime();
  if (runtime == nullptr) throw std::runtime_error("configure() must be called first");
  return *runtime;
}

PipelineHandle& HandleFrom(const Napi::Value& value) {
  if (!value.IsExternal() || !value.As<Napi::External<PipelineHandle>>().CheckTypeTag(&kPipelineTag)) {
    throw std::runtime_error("not a pipeline handle");
  }
  return *value.As<Napi::External<PipelineHandle>>().Data();
}

// Sync boundary: any exception becomes a thrown native_error.
template <typename Fn>
Napi::Value SyncBoundary(const Napi::CallbackInfo& info, Fn&& fn) {
  Napi::Env env = info.Env();
  try {
    return fn(env);
  } catch (...) {
    std::string message = MessageOf(std::current_exception());
    if (env.IsExceptionPending()) env.GetAndClearPendingException();
    throw NativeError(env, message);
  }
}

// Async boundary: any exception before the work is scheduled becomes a rejected promise.
template <typename Fn>
Napi::Value AsyncBoundary(const Napi::CallbackInfo& info, Fn&& fn) {
  Napi::Env env = info.Env();
  napi_deferred deferred = nullptr;
  napi_value promise = nullptr;
  NAPI_THROW_IF_FAILED(env, napi_create_promise(env, &deferred, &promise), Napi::Value());
  std::vector<napi_ref> refs;
  try {
    fn(env, deferred, refs);  // on success, ownership of deferred and refs moved into a Call
  } catch (...) {
    std::string message = MessageOf(std::current_exception());
    if (env.IsExceptionPending()) env.GetAndClearPendingException();
    for (napi_ref ref : refs) napi_delete_reference(env, ref);
    napi_reject_deferred(env, deferred, NativeError(env, message).Value());
  }
  return Napi::Value(env, promise);
}

// One asynchronous call: `work` runs on the pool with no N-API use, `settle` turns its result
// into a JS value on the JS thread. The work (with the pipeline and inputs it captured) is
// dropped as soon as it has run.
template <typename Result>
class TaskCall : public Call {
 public:
  using Settler = Napi::Value (*)(Napi::Env, Result&);
  TaskCall(napi_deferred d, std::function<Result()> work, Settler settle)
      : Call(d), work_(std::move(work)), settle_(settle) {}
  void Work() override {
    result_ = work_();
    work_ = nullptr;
  }
  Napi::Value Settle(Napi::Env env) override { return settle_(env, result_); }

 private:
  std::function<Result()> work_;
  Settler settle_;
  Result result_{};
};

Napi::Value PipelineToJs(Napi::Env env, std::shared_ptr<const Pipeline>& pipeline) {
  auto* handle = new PipelineHandle();
  handle->pipeline = std::move(pipeline);
  auto external = Napi::External<PipelineHandle>::New(env, handle, [](Napi::Env, PipelineHandle* h) { delete h; });
  external.TypeTag(&kPipelineTag);
  return external;
}

Napi::Value ItemResultsToJs(Napi::Env env, std::vector<ItemResult>& results) { return ResultsToJs(env, results); }
#ifdef CATCOMFORT_BENCH_ENTRY_POINTS
Napi::Value TimingsToJs(Napi::Env env, std::vector<DecodeTiming>& timings) { return DecodeTimingsToJs(env, timings); }
#endif
Napi::Value MsToJs(Napi::Env env, double& ms) { return Napi::Number::New(env, ms); }
Napi::Value TensorsToJs(Napi::Env env, std::vector<FloatTensor>& tensors) { return FloatTensorsToJs(env, tensors); }
Napi::Value ImageToJs(Napi::Env env, PreprocessedImage& image) { return PreprocessedToJs(env, image); }
Napi::Value DetectionsResultToJs(Napi::Env env, std::vector<Detection>& detections) { return DetectionsToJs(env, detections); }

template <typename Result>
void ScheduleTask(Napi::Env env, napi_deferred deferred, std::vector<napi_ref>& refs, std::function<Result()> work,
                  typename TaskCall<Result>::Settler settle) {
  auto call = std::make_unique<TaskCall<Result>>(deferred, std::move(work), settle);
  call->refs_ = refs;
  Schedule(env, std::move(call));
  refs.clear();  // now owned by the call
}

// analyze() and benchDecode() take the same arguments: a live pipeline and an item array.
std::shared_ptr<const Pipeline> LivePipeline(const Napi::Value& value) {
  std::shared_ptr<const Pipeline> pipeline = HandleFrom(value).Get();
  if (!pipeline) throw std::runtime_error("pipeline was released");
  return pipeline;
}

std::vector<ItemInput> ItemsFromJs(const Napi::Value& value, std::vector<napi_ref>& refs) {
  if (!value.IsArray()) throw std::runtime_error("items must be an array");
  Napi::Array array = value.As<Napi::Array>();
  std::vector<ItemInput> items;
  items.reserve(array.Length());
  for (uint32_t i = 0; i < array.Length(); ++i) {
    napi_ref ref = nullptr;
    items.push_back(ItemFromJs(array.Get(i), &ref));
    if (ref != nullptr) refs.push_back(ref);
  }
  return items;
}

Napi::Value JsConfigure(const Napi::CallbackInfo& info) {
  return SyncBoundary(info, [&](Napi::Env env) -> Napi::Value {
    Runtime& runtime = catcomfort::Configure(ConfigFromJs(info[0]));
    return InfoToJs(env, runtime.info);
  });
}

Napi::Value JsCreatePipeline(const Napi::CallbackInfo& info) {
  return AsyncBoundary(info, [&](Napi::Env env, napi_deferred deferred, std::vector<napi_ref>& refs) {
    Runtime& runtime = RequireRuntime();
    auto spec = std::make_shared<PipelineSpec>(PipelineSpecFromJs(info[0]));
    ScheduleTask<std::shared_ptr<const Pipeline>>(
        env, deferred, refs, [spec, &runtime] { return Pipeline::Create(std::move(*spec), runtime); }, PipelineToJs);
  });
}

Napi::Value JsAnalyze(const Napi::CallbackInfo& info) {
  return AsyncBoundary(info, [&](Napi::Env env, napi_deferred deferred, std::vector<napi_ref>& refs) {
    Runtime& runtime = RequireRuntime();
    std::shared_ptr<const Pipeline> pipeline = LivePipeline(info[0]);
    auto items = std::make_shared<std::vector<ItemInput>>(ItemsFromJs(info[1], refs));
    ScheduleTask<std::vector<ItemResult>>(
        env, deferred, refs, [pipeline, items, &runtime] { return pipeline->Analyze(*items, *runtime.pool); },
        ItemResultsToJs);
  });
}

#ifdef CATCOMFORT_BENCH_ENTRY_POINTS
Napi::Value JsBenchDecode(const Napi::CallbackInfo& info) {
  return AsyncBoundary(info, [&](Napi::Env env, napi_deferred deferred, std::vector<napi_ref>& refs) {
    Runtime& runtime = RequireRuntime();
    std::shared_ptr<const Pipeline> pipeline = LivePipeline(info[0]);
    auto items = std::make_shared<std::vector<ItemInput>>(ItemsFromJs(info[1], refs));
    ScheduleTask<std::vector<DecodeTiming>>(
        env, deferred, refs, [pipeline, items, &runtime] { return pipeline->BenchDecode(*items, *runtime.pool); },
        TimingsToJs);
  });
}
#endif

Napi::Value JsRunSession(const Napi::CallbackInfo& info) {
  return AsyncBoundary(info, [&](Napi::Env env, napi_deferred deferred, std::vector<napi_ref>& refs) {
    RequireRuntime();
    std::shared_ptr<const Pipeline> pipeline = LivePipeline(info[0]);
    SessionStage stage = SessionStageFromJs(info[1]);
    int64_t batch = BatchFromJs(info[2]);
    auto row = std::make_shared<const std::vector<float>>(RowFromJs(info[3]));
    ScheduleTask<double>(
        env, deferred, refs, [pipeline, stage, batch, row] { return pipeline->BenchSession(stage, batch, *row); }, MsToJs);
  });
}

Napi::Value JsKeepSessionBatches(const Napi::CallbackInfo& info) {
  return SyncBoundary(info, [&](Napi::Env env) -> Napi::Value {
    LivePipeline(info[0])->KeepSessionBatches(SessionStageFromJs(info[1]), BatchesFromJs(info[2]));
    return env.Undefined();
  });
}

// Tools and tests: one Run of any float32 model, on the pool (session created and dropped per call).
Napi::Value JsRunModel(const Napi::CallbackInfo& info) {
  return AsyncBoundary(info, [&](Napi::Env env, napi_deferred deferred, std::vector<napi_ref>& refs) {
    Runtime& runtime = RequireRuntime();
    auto request = std::make_shared<RunModelRequest>(RunModelRequestFromJs(info[0], info[1]));
    ScheduleTask<std::vector<FloatTensor>>(
        env, deferred, refs, [request, &runtime] { return RunModel(*request, runtime); }, TensorsToJs);
  });
}

Napi::Value JsPreprocessImage(const Napi::CallbackInfo& info) {
  return AsyncBoundary(info, [&](Napi::Env env, napi_deferred deferred, std::vector<napi_ref>& refs) {
    RequireRuntime();
    auto request = std::make_shared<PreprocessRequest>(PreprocessRequestFromJs(info[0], info[1]));
    ScheduleTask<PreprocessedImage>(
        env, deferred, refs, [request] { return PreprocessImage(*request); }, ImageToJs);
  });
}

// trimFreePages(): glibc's malloc_trim(0) on the pool (it walks every arena), with the process's
// resident bytes around it.
Napi::Value TrimOutcomeToJs(Napi::Env env, TrimOutcome& outcome) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("residentBeforeBytes", Napi::Number::New(env, static_cast<double>(outcome.residentBefore)));
  out.Set("residentAfterBytes", Napi::Number::New(env, static_cast<double>(outcome.residentAfter)));
  out.Set("ms", Napi::Number::New(env, outcome.ms));
  return out;
}

Napi::Value JsTrimFreePages(const Napi::CallbackInfo& info) {
  return AsyncBoundary(info, [&](Napi::Env env, napi_deferred deferred, std::vector<napi_ref>& refs) {
    RequireRuntime();
    ScheduleTask<TrimOutcome>(env, deferred, refs, [] { return TrimFreePages(); }, TrimOutcomeToJs);
  });
}

Napi::Value JsDecodeDetections(const Napi::CallbackInfo& info) {
  return AsyncBoundary(info, [&](Napi::Env env, napi_deferred deferred, std::vector<napi_ref>& refs) {
    RequireRuntime();
    auto request = std::make_shared<DecodeRequest>(DecodeRequestFromJs(info[0], info[1]));
    ScheduleTask<std::vector<Detection>>(
        env, deferred, refs, [request] { return DecodeDetections(*request); }, DetectionsResultToJs);
  });
}

// The one strict (v2) base64 decoder, also for scan submissions: a Buffer, or the failure's code
// ('invalid_base64' / 'empty_image') as a string. Runs on the JS thread (scan images are <= 4 MB).
Napi::Value JsDecodeBase64Strict(const Napi::CallbackInfo& info) {
  return SyncBoundary(info, [&](Napi::Env env) -> Napi::Value {
    if (!info[0].IsString()) throw std::invalid_argument("decodeBase64Strict takes a string");
    const std::string text = info[0].As<Napi::String>().Utf8Value();
    try {
      const ImageBytes bytes = DecodeBase64Strict(reinterpret_cast<const uint8_t*>(text.data()), text.size());
      return Napi::Buffer<uint8_t>::Copy(env, bytes.data(), bytes.size());
    } catch (const ItemError& e) {
      return Napi::String::New(env, ItemErrorCodeName(e.code));
    }
  });
}

Napi::Value JsSessionBatches(const Napi::CallbackInfo& info) {
  return SyncBoundary(info, [&](Napi::Env env) -> Napi::Value {
    return SessionBatchesToJs(env, LivePipeline(info[0])->SessionBatches());
  });
}

Napi::Value JsHostMemory(const Napi::CallbackInfo& info) {
  return SyncBoundary(info, [&](Napi::Env env) -> Napi::Value {
    const std::shared_ptr<const Pipeline> pipeline = LivePipeline(info[0]);
    Napi::Object o = Napi::Object::New(env);
    o.Set("detector", pipeline->PinnedHostMemory(SessionStage::Detector) ? "pinned" : "cpu");
    o.Set("classifier", pipeline->PinnedHostMemory(SessionStage::Classifier) ? "pinned" : "cpu");
    return o;
  });
}

// The simulated device's counters, or null when this process runs none.
Napi::Value JsSimulatedDevice(const Napi::CallbackInfo& info) {
  return SyncBoundary(info, [&](Napi::Env env) -> Napi::Value {
    const SimulatedDevice* device = CurrentSimulatedDevice();
    if (device == nullptr) return env.Null();
    const DeviceStats stats = device->Stats();
    Napi::Object o = Napi::Object::New(env);
    o.Set("profile", device->Profile().name);
    o.Set("streams", stats.streams);
    o.Set("runs", static_cast<double>(stats.runs));
    o.Set("busyMs", stats.busyMs);
    o.Set("elapsedMs", stats.elapsedMs);
    return o;
  });
}

#ifdef CATCOMFORT_BENCH_ENTRY_POINTS
StageCost StageCostFromJs(const Napi::Object& profile, const char* key) {
  Napi::Object o = AsObject(profile.Get(key), key);
  StageCost cost;
  Napi::Array batches = Array(o, "batches");
  Napi::Array hostMs = Array(o, "hostMs");
  Napi::Array deviceMs = Array(o, "deviceMs");
  if (batches.Length() == 0 || hostMs.Length() != batches.Length() || deviceMs.Length() != batches.Length()) {
    Bad(o.Env(), std::string(key) + ": batches, hostMs and deviceMs must be arrays of one length, at least 1");
  }
  for (uint32_t i = 0; i < batches.Length(); ++i) {
    cost.batches.push_back(static_cast<int64_t>(batches.Get(i).As<Napi::Number>().Int64Value()));
    cost.hostMs.push_back(hostMs.Get(i).As<Napi::Number>().DoubleValue());
    cost.deviceMs.push_back(deviceMs.Get(i).As<Napi::Number>().DoubleValue());
  }
  return cost;
}

// Benchmarks and tests only: the process's simulated device (once), and this pipeline on it from
// its next real Run of each stage on (Pipeline::Simulate).
Napi::Value JsSimulate(const Napi::CallbackInfo& info) {
  return SyncBoundary(info, [&](Napi::Env env) -> Napi::Value {
    std::shared_ptr<const Pipeline> pipeline = LivePipeline(info[0]);
    Napi::Object o = AsObject(info[1], "profile");
    DeviceProfile profile;
    profile.name = String(o, "name");
    profile.streams = Int(o, "streams", 1);
    profile.decodeHostMs = Number(o, "decodeHostMs");
    profile.detector = StageCostFromJs(o, "detector");
    profile.classifier = StageCostFromJs(o, "classifier");
    const bool decode = info[2].ToBoolean().Value();
    pipeline->Simulate(SetSimulatedDevice(std::move(profile)), decode);
    return env.Undefined();
  });
}
#endif

Napi::Value JsReleasePipeline(const Napi::CallbackInfo& info) {
  return SyncBoundary(info, [&](Napi::Env env) -> Napi::Value {
    HandleFrom(info[0]).Release();
    return env.Undefined();
  });
}

}  // namespace

// Environments (main thread, worker threads) that loaded the addon; the pool is stopped when
// the last one is torn down, so no pool thread is still inside ORT or libvips while the process
// exits (running calls finish first, queued ones are dropped).
static std::mutex g_envMutex;
static size_t g_envCount = 0;

static void EnvGone(void*) {
  bool last = false;
  {
    std::lock_guard<std::mutex> lock(g_envMutex);
    last = --g_envCount == 0;
  }
  if (last) ShutdownRuntime();
}

// dupFd(fd): a second descriptor of the same open socket (close-on-exec), so the HTTP front's
// threads each own one and closing one leaves the others open; throws with errno's text.
static Napi::Value JsDupFd(const Napi::CallbackInfo& info) {
  const int fd = info[0].As<Napi::Number>().Int32Value();
  const int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) throw Napi::Error::New(info.Env(), std::string("dup of descriptor failed: ") + std::strerror(errno));
  return Napi::Number::New(info.Env(), copy);
}

// pendingInputBytes(fd): bytes that have arrived on a socket and are not read yet (FIONREAD);
// throws with errno's text.
static Napi::Value JsPendingInputBytes(const Napi::CallbackInfo& info) {
  const int fd = info[0].As<Napi::Number>().Int32Value();
  int bytes = 0;
  if (ioctl(fd, FIONREAD, &bytes) < 0) throw Napi::Error::New(info.Env(), std::string("FIONREAD failed: ") + std::strerror(errno));
  return Napi::Number::New(info.Env(), bytes);
}

// imageBlocks(): the counts of the pool of image-sized blocks, read on the JS thread.
static Napi::Value JsImageBlocks(const Napi::CallbackInfo& info) {
  const ImageBlockCounts counts = CountImageBlocks();
  Napi::Object out = Napi::Object::New(info.Env());
  out.Set("taken", Napi::Number::New(info.Env(), static_cast<double>(counts.taken)));
  out.Set("reused", Napi::Number::New(info.Env(), static_cast<double>(counts.reused)));
  out.Set("idleBytes", Napi::Number::New(info.Env(), static_cast<double>(counts.idleBytes)));
  out.Set("mappedBytes", Napi::Number::New(info.Env(), static_cast<double>(counts.mappedBytes)));
  return out;
}

// releaseArrayBuffer(buffer): detaches it, so its memory is freed now rather than at the V8
// collection that finds it unreachable (src/native/own-memory.ts).
static Napi::Value JsReleaseArrayBuffer(const Napi::CallbackInfo& info) {
  return SyncBoundary(info, [&](Napi::Env env) -> Napi::Value {
    if (!info[0].IsArrayBuffer()) throw std::invalid_argument("releaseArrayBuffer takes an ArrayBuffer");
    Napi::ArrayBuffer buffer = info[0].As<Napi::ArrayBuffer>();
    if (!buffer.IsDetached()) buffer.Detach();
    return env.Undefined();
  });
}

// mallocBytes(): jemalloc's account of its memory, or null under another malloc.
static Napi::Value JsMallocBytes(const Napi::CallbackInfo& info) {
  const MallocBytes bytes = ReadMallocBytes();
  if (!bytes.known) return info.Env().Null();
  Napi::Object out = Napi::Object::New(info.Env());
  const auto set = [&](const char* name, int64_t value) { out.Set(name, Napi::Number::New(info.Env(), static_cast<double>(value))); };
  set("allocated", bytes.allocated);
  set("active", bytes.active);
  set("dirty", bytes.dirty);
  set("resident", bytes.resident);
  set("retained", bytes.retained);
  return out;
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  KeepMallocCompact();  // before the service's threads allocate
  {
    std::lock_guard<std::mutex> lock(g_envMutex);
    ++g_envCount;
  }
  napi_add_env_cleanup_hook(env, EnvGone, nullptr);
  exports.Set("configure", Napi::Function::New(env, JsConfigure, "configure"));
  exports.Set("createPipeline", Napi::Function::New(env, JsCreatePipeline, "createPipeline"));
  exports.Set("analyze", Napi::Function::New(env, JsAnalyze, "analyze"));
  exports.Set("releasePipeline", Napi::Function::New(env, JsReleasePipeline, "releasePipeline"));
#ifdef CATCOMFORT_BENCH_ENTRY_POINTS
  exports.Set("benchDecode", Napi::Function::New(env, JsBenchDecode, "benchDecode"));
  exports.Set("simulate", Napi::Function::New(env, JsSimulate, "simulate"));
#endif
  exports.Set("runSession", Napi::Function::New(env, JsRunSession, "runSession"));
  exports.Set("sessionBatches", Napi::Function::New(env, JsSessionBatches, "sessionBatches"));
  exports.Set("keepSessionBatches", Napi::Function::New(env, JsKeepSessionBatches, "keepSessionBatches"));
  exports.Set("hostMemory", Napi::Function::New(env, JsHostMemory, "hostMemory"));
  exports.Set("simulatedDevice", Napi::Function::New(env, JsSimulatedDevice, "simulatedDevice"));
  exports.Set("decodeBase64Strict", Napi::Function::New(env, JsDecodeBase64Strict, "decodeBase64Strict"));
  exports.Set("runModel", Napi::Function::New(env, JsRunModel, "runModel"));
  exports.Set("preprocessImage", Napi::Function::New(env, JsPreprocessImage, "preprocessImage"));
  exports.Set("decodeDetections", Napi::Function::New(env, JsDecodeDetections, "decodeDetections"));
  exports.Set("dupFd", Napi::Function::New(env, JsDupFd, "dupFd"));
  exports.Set("imageBlocks", Napi::Function::New(env, JsImageBlocks, "imageBlocks"));
  exports.Set("mallocBytes", Napi::Function::New(env, JsMallocBytes, "mallocBytes"));
  exports.Set("releaseArrayBuffer", Napi::Function::New(env, JsReleaseArrayBuffer, "releaseArrayBuffer"));
  exports.Set("pendingInputBytes", Napi::Function::New(env, JsPendingInputBytes, "pendingInputBytes"));
  exports.Set("trimFreePages", Napi::Function::New(env, JsTrimFreePages, "trimFreePages"));
  return exports;
}

}  // namespace catcomfort

static Napi::Object InitCatComfort(Napi::Env env, Napi::Object exports) { return catcomfort::Init(env, exports); }

NODE_API_MODULE(catcomfort, InitCatComfort)
