// The N-API surface (src/native/addon.ts): configure, createPipeline, analyze, releasePipeline,
// and the micro-benchmark entry points benchDecode and benchSession.
//
// JS values are copied into plain structs here, on the JS thread; the work runs on the addon's
// own pool with no N-API calls; results come back through a per-call thread-safe function and
// are converted on the JS thread. C++ exceptions become JS errors (code 'native_error') in one
// place: NativeError(), reached from the Sync/Async boundaries and from Deliver().
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <napi.h>

#include "js_convert.h"
#include "pipeline.h"
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

class CreateCall : public Call {
 public:
  CreateCall(napi_deferred d, PipelineSpec spec, Runtime& runtime)
      : Call(d), spec_(std::move(spec)), runtime_(runtime) {}
  void Work() override { pipeline_ = Pipeline::Create(std::move(spec_), runtime_); }
  Napi::Value Settle(Napi::Env env) override {
    auto* handle = new PipelineHandle();
    handle->pipeline = std::move(pipeline_);
    auto external = Napi::External<PipelineHandle>::New(env, handle, [](Napi::Env, PipelineHandle* h) { delete h; });
    external.TypeTag(&kPipelineTag);
    return external;
  }

 private:
  PipelineSpec spec_;
  Runtime& runtime_;
  std::shared_ptr<const Pipeline> pipeline_;
};

class AnalyzeCall : public Call {
 public:
  AnalyzeCall(napi_deferred d, std::shared_ptr<const Pipeline> pipeline, std::vector<ItemInput> items, Runtime& runtime)
      : Call(d), pipeline_(std::move(pipeline)), items_(std::move(items)), runtime_(runtime) {}
  void Work() override {
    results_ = pipeline_->Analyze(items_, *runtime_.pool);
    pipeline_.reset();
    items_.clear();
  }
  Napi::Value Settle(Napi::Env env) override { return ResultsToJs(env, results_); }

 private:
  std::shared_ptr<const Pipeline> pipeline_;
  std::vector<ItemInput> items_;
  Runtime& runtime_;
  std::vector<ItemResult> results_;
};

class BenchDecodeCall : public Call {
 public:
  BenchDecodeCall(napi_deferred d, std::shared_ptr<const Pipeline> pipeline, std::vector<ItemInput> items,
                  Runtime& runtime)
      : Call(d), pipeline_(std::move(pipeline)), items_(std::move(items)), runtime_(runtime) {}
  void Work() override {
    timings_ = pipeline_->BenchDecode(items_, *runtime_.pool);
    pipeline_.reset();
    items_.clear();
  }
  Napi::Value Settle(Napi::Env env) override { return DecodeTimingsToJs(env, timings_); }

 private:
  std::shared_ptr<const Pipeline> pipeline_;
  std::vector<ItemInput> items_;
  Runtime& runtime_;
  std::vector<DecodeTiming> timings_;
};

class BenchSessionCall : public Call {
 public:
  BenchSessionCall(napi_deferred d, std::shared_ptr<const Pipeline> pipeline, SessionStage stage, int64_t batch)
      : Call(d), pipeline_(std::move(pipeline)), stage_(stage), batch_(batch) {}
  void Work() override {
    ms_ = pipeline_->BenchSession(stage_, batch_);
    pipeline_.reset();
  }
  Napi::Value Settle(Napi::Env env) override { return Napi::Number::New(env, ms_); }

 private:
  std::shared_ptr<const Pipeline> pipeline_;
  SessionStage stage_;
  int64_t batch_;
  double ms_ = 0;
};

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
  return AsyncBoundary(info, [&](Napi::Env env, napi_deferred deferred, std::vector<napi_ref>&) {
    Runtime& runtime = RequireRuntime();
    PipelineSpec spec = PipelineSpecFromJs(info[0]);
    Schedule(env, std::make_unique<CreateCall>(deferred, std::move(spec), runtime));
  });
}

Napi::Value JsAnalyze(const Napi::CallbackInfo& info) {
  return AsyncBoundary(info, [&](Napi::Env env, napi_deferred deferred, std::vector<napi_ref>& refs) {
    Runtime& runtime = RequireRuntime();
    std::shared_ptr<const Pipeline> pipeline = LivePipeline(info[0]);
    std::vector<ItemInput> items = ItemsFromJs(info[1], refs);
    auto call = std::make_unique<AnalyzeCall>(deferred, std::move(pipeline), std::move(items), runtime);
    call->refs_ = refs;
    Schedule(env, std::move(call));
    refs.clear();  // now owned by the call
  });
}

Napi::Value JsBenchDecode(const Napi::CallbackInfo& info) {
  return AsyncBoundary(info, [&](Napi::Env env, napi_deferred deferred, std::vector<napi_ref>& refs) {
    Runtime& runtime = RequireRuntime();
    std::shared_ptr<const Pipeline> pipeline = LivePipeline(info[0]);
    std::vector<ItemInput> items = ItemsFromJs(info[1], refs);
    auto call = std::make_unique<BenchDecodeCall>(deferred, std::move(pipeline), std::move(items), runtime);
    call->refs_ = refs;
    Schedule(env, std::move(call));
    refs.clear();  // now owned by the call
  });
}

Napi::Value JsBenchSession(const Napi::CallbackInfo& info) {
  return AsyncBoundary(info, [&](Napi::Env env, napi_deferred deferred, std::vector<napi_ref>&) {
    RequireRuntime();
    std::shared_ptr<const Pipeline> pipeline = LivePipeline(info[0]);
    SessionStage stage = SessionStageFromJs(info[1]);
    int64_t batch = BatchFromJs(info[2]);
    Schedule(env, std::make_unique<BenchSessionCall>(deferred, std::move(pipeline), stage, batch));
  });
}

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

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  {
    std::lock_guard<std::mutex> lock(g_envMutex);
    ++g_envCount;
  }
  napi_add_env_cleanup_hook(env, EnvGone, nullptr);
  exports.Set("configure", Napi::Function::New(env, JsConfigure, "configure"));
  exports.Set("createPipeline", Napi::Function::New(env, JsCreatePipeline, "createPipeline"));
  exports.Set("analyze", Napi::Function::New(env, JsAnalyze, "analyze"));
  exports.Set("releasePipeline", Napi::Function::New(env, JsReleasePipeline, "releasePipeline"));
  exports.Set("benchDecode", Napi::Function::New(env, JsBenchDecode, "benchDecode"));
  exports.Set("benchSession", Napi::Function::New(env, JsBenchSession, "benchSession"));
  return exports;
}

}  // namespace catcomfort

static Napi::Object InitCatComfort(Napi::Env env, Napi::Object exports) { return catcomfort::Init(env, exports); }

NODE_API_MODULE(catcomfort, InitCatComfort)
