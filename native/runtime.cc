#include "runtime.h"

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>

#include <vips/vips.h>

namespace catcomfort {

namespace {

std::mutex g_mutex;
// Deliberately never destroyed: worker threads may still be inside ORT or libvips while the
// process exits, so no static destructor may tear these down under them.
Runtime* g_runtime = nullptr;

const char* ProviderName(ProviderKind kind) {
  switch (kind) {
    case ProviderKind::TensorRt:
      return "tensorrt";
    case ProviderKind::Cuda:
      return "cuda";
    default:
      return "cpu";
  }
}

const char* OrtProviderName(ProviderKind kind) {
  switch (kind) {
    case ProviderKind::TensorRt:
      return "TensorrtExecutionProvider";
    case ProviderKind::Cuda:
      return "CUDAExecutionProvider";
    default:
      return "CPUExecutionProvider";
  }
}

void AppendProvider(Ort::SessionOptions& options, ProviderKind kind, const NativeConfig& config) {
  const OrtApi& api = Ort::GetApi();
  const std::string device = std::to_string(config.deviceId);
  if (kind == ProviderKind::TensorRt) {
    OrtTensorRTProviderOptionsV2* raw = nullptr;
    Ort::ThrowOnError(api.CreateTensorRTProviderOptions(&raw));
    std::unique_ptr<OrtTensorRTProviderOptionsV2, decltype(api.ReleaseTensorRTProviderOptions)> trt(
        raw, api.ReleaseTensorRTProviderOptions);
    std::vector<const char*> keys{"device_id", "trt_fp16_enable"};
    std::vector<const char*> values{device.c_str(), config.trtFp16 ? "1" : "0"};
    if (!config.trtCacheDir.empty()) {
      keys.push_back("trt_engine_cache_enable");
      values.push_back("1");
      keys.push_back("trt_engine_cache_path");
      values.push_back(config.trtCacheDir.c_str());
    }
    Ort::ThrowOnError(api.UpdateTensorRTProviderOptions(trt.get(), keys.data(), values.data(), keys.size()));
    options.AppendExecutionProvider_TensorRT_V2(*trt);
  } else if (kind == ProviderKind::Cuda) {
    OrtCUDAProviderOptionsV2* raw = nullptr;
    Ort::ThrowOnError(api.CreateCUDAProviderOptions(&raw));
    std::unique_ptr<OrtCUDAProviderOptionsV2, decltype(api.ReleaseCUDAProviderOptions)> cuda(
        raw, api.ReleaseCUDAProviderOptions);
    const char* keys[] = {"device_id"};
    const char* values[] = {device.c_str()};
    Ort::ThrowOnError(api.UpdateCUDAProviderOptions(cuda.get(), keys, values, 1));
    options.AppendExecutionProvider_CUDA_V2(*cuda);
  }
}

ProviderStatus Probe(ProviderKind kind, const NativeConfig& config, const std::vector<std::string>& available) {
  ProviderStatus status;
  status.name = ProviderName(kind);
  if (kind == ProviderKind::Cpu) {
    status.active = true;
    return status;
  }
  // GetAvailableProviders() only lists providers compiled into libonnxruntime itself; CUDA and
  // TensorRT can also come as provider libraries loaded at append time, so the probe decides.
  const std::string ortName = OrtProviderName(kind);
  const bool listed = std::find(available.begin(), available.end(), ortName) != available.end();
  try {
    Ort::SessionOptions probe;
    AppendProvider(probe, kind, config);  // loads the provider library and its CUDA dependencies
    status.active = true;
  } catch (const std::exception& e) {
    status.reason = e.what();
  } catch (...) {
  }
  if (!status.active) {
    if (status.reason.empty()) status.reason = "provider failed to load";
    if (!listed) status.reason += " (" + ortName + " is not built into this ONNX Runtime)";
  }
  return status;
}

bool SameConfig(const NativeConfig& a, const NativeConfig& b) {
  return a.providers == b.providers && a.deviceId == b.deviceId && a.trtCacheDir == b.trtCacheDir &&
         a.trtFp16 == b.trtFp16 && a.poolThreads == b.poolThreads && a.intraOpThreads == b.intraOpThreads;
}

}  // namespace

Runtime* GetRuntime() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_runtime;
}

Runtime& Configure(const NativeConfig& requested) {
  std::lock_guard<std::mutex> lock(g_mutex);
  NativeConfig config = requested;
  config.providers.erase(std::remove(config.providers.begin(), config.providers.end(), ProviderKind::Cpu),
                         config.providers.end());
  config.providers.push_back(ProviderKind::Cpu);  // always last
  config.poolThreads = std::max(1, config.poolThreads);
  config.intraOpThreads = std::max(1, config.intraOpThreads);
  if (g_runtime != nullptr) {
    if (!SameConfig(g_runtime->config, config)) {
      throw std::runtime_error("configure() was already called with a different config; it runs once per process");
    }
    return *g_runtime;
  }

  if (VIPS_INIT("catcomfort") != 0) {
    std::string message = vips_error_buffer();
    vips_error_clear();
    throw std::runtime_error("libvips failed to initialise: " + message);
  }
  vips_cache_set_max(0);             // no operation cache: every image is new
  vips_block_untrusted_set(TRUE);    // no loaders libvips marks as unsafe for untrusted input
  vips_concurrency_set(1);           // one libvips worker per call; the pool parallelises items
  // Client images are often damaged; libvips' per-image warnings (already turned into item
  // failures by fail_on) would only flood stderr.
  g_log_set_handler("VIPS", static_cast<GLogLevelFlags>(G_LOG_LEVEL_WARNING | G_LOG_LEVEL_MESSAGE | G_LOG_LEVEL_INFO),
                    [](const gchar*, GLogLevelFlags, const gchar*, gpointer) {}, nullptr);

  auto runtime = std::make_unique<Runtime>();
  runtime->config = config;
  runtime->env = std::make_unique<Ort::Env>(ORT_LOGGING_LEVEL_WARNING, "catcomfort");
  runtime->info.vipsVersion = vips_version_string();
  runtime->info.ortVersion = Ort::GetVersionString();
  const std::vector<std::string> available = Ort::GetAvailableProviders();
  for (ProviderKind kind : config.providers) {
    ProviderStatus status = Probe(kind, config, available);
    if (status.active && kind != ProviderKind::Cpu) runtime->activeProviders.push_back(kind);
    runtime->info.providers.push_back(std::move(status));
  }
  runtime->pool = std::make_unique<ThreadPool>(static_cast<size_t>(config.poolThreads));
  g_runtime = runtime.release();
  return *g_runtime;
}

Ort::SessionOptions MakeSessionOptions(const Runtime& runtime) {
  Ort::SessionOptions options;
  options.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_ENABLE_ALL);
  options.SetIntraOpNumThreads(runtime.config.intraOpThreads);
  options.SetInterOpNumThreads(1);
  options.SetExecutionMode(ExecutionMode::ORT_SEQUENTIAL);
  // The pool already keeps the cores busy; spinning intra-op threads would only steal from it.
  options.AddConfigEntry("session.intra_op.allow_spinning", "0");
  for (ProviderKind kind : runtime.activeProviders) AppendProvider(options, kind, runtime.config);
  return options;
}

void ShutdownRuntime() {
  Runtime* runtime = GetRuntime();
  if (runtime != nullptr && runtime->pool) runtime->pool->Shutdown();
}

}  // namespace catcomfort
