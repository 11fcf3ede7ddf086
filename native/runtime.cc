#include "runtime.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include <vips/vips.h>

#include "malloc_policy.h"

namespace catcomfort {

namespace {

std::mutex g_mutex;
// Deliberately never destroyed: worker threads may still be inside ORT or libvips while the
// process exits, so no static destructor may tear these down under them.
Runtime* g_runtime = nullptr;

// Our name and ONNX Runtime's of each provider, in ProviderKind order (TensorRt, Cuda, Cpu).
struct ProviderNames {
  const char* ours;
  const char* ort;
};
constexpr ProviderNames kProviderNames[] = {
    {"tensorrt", "TensorrtExecutionProvider"}, {"cuda", "CUDAExecutionProvider"}, {"cpu", "CPUExecutionProvider"}};

const char* ProviderName(ProviderKind kind) { return kProviderNames[static_cast<int>(kind)].ours; }
const char* OrtProviderName(ProviderKind kind) { return kProviderNames[static_cast<int>(kind)].ort; }

// Provider options shared by the classic and the plugin append; `deviceId` only for the classic one
// (a plugin EP is given its EP device, and naming it again makes ORT warn at every session).
std::vector<std::pair<std::string, std::string>> ProviderOptions(ProviderKind kind, const NativeConfig& config, bool deviceId) {
  std::vector<std::pair<std::string, std::string>> options;
  if (deviceId) options.emplace_back("device_id", std::to_string(config.deviceId));
  if (kind == ProviderKind::Cuda) options.emplace_back("cudnn_conv_algo_search", config.cudnnConvAlgoSearch);
  if (kind == ProviderKind::TensorRt) {
    options.emplace_back("trt_fp16_enable", config.trtFp16 ? "1" : "0");
    if (!config.trtCacheDir.empty()) {
      options.emplace_back("trt_engine_cache_enable", "1");
      options.emplace_back("trt_engine_cache_path", config.trtCacheDir);
    }
  }
  return options;
}

// A provider's V2 options struct, created and filled with keys/values through ORT's C API.
template <typename T, typename Create, typename Update, typename Release>
std::unique_ptr<T, Release> FilledOptions(Create create, Update update, Release release, const std::vector<const char*>& keys,
                                          const std::vector<const char*>& values) {
  T* raw = nullptr;
  Ort::ThrowOnError(create(&raw));
  std::unique_ptr<T, Release> owned(raw, release);
  Ort::ThrowOnError(update(owned.get(), keys.data(), values.data(), keys.size()));
  return owned;
}

// The provider compiled into (or bridged by) libonnxruntime itself.
void AppendClassic(Ort::SessionOptions& options, ProviderKind kind, const NativeConfig& config) {
  const OrtApi& api = Ort::GetApi();
  const auto pairs = ProviderOptions(kind, config, true);
  std::vector<const char*> keys;
  std::vector<const char*> values;
  for (const auto& [k, v] : pairs) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  if (kind == ProviderKind::TensorRt) {
    options.AppendExecutionProvider_TensorRT_V2(*FilledOptions<OrtTensorRTProviderOptionsV2>(
        api.CreateTensorRTProviderOptions, api.UpdateTensorRTProviderOptions, api.ReleaseTensorRTProviderOptions, keys, values));
  } else if (kind == ProviderKind::Cuda) {
    options.AppendExecutionProvider_CUDA_V2(*FilledOptions<OrtCUDAProviderOptionsV2>(
        api.CreateCUDAProviderOptions, api.UpdateCUDAProviderOptions, api.ReleaseCUDAProviderOptions, keys, values));
  }
}

void AppendPlugin(Ort::SessionOptions& options, Ort::Env& env, const ActiveProvider& provider,
                  const NativeConfig& config) {
  std::unordered_map<std::string, std::string> map;
  for (auto& [k, v] : ProviderOptions(provider.kind, config, false)) map.emplace(std::move(k), std::move(v));
  options.AppendExecutionProvider_V2(env, provider.devices, map);
}

void AppendProvider(Ort::SessionOptions& options, Ort::Env& env, const ActiveProvider& provider,
                    const NativeConfig& config) {
  if (provider.plugin) {
    AppendPlugin(options, env, provider, config);
  } else {
    AppendClassic(options, provider.kind, config);
  }
}

std::string Dirname(const char* file) {
  std::string path = file != nullptr ? file : "";
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// Directories to look for provider libraries in: beside the addon (CMake copies them there), then
// beside the libonnxruntime.so.1 that was actually loaded.
std::vector<std::string> ProviderLibraryDirs() {
  std::vector<std::string> dirs;
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&ProviderLibraryDirs), &info) != 0 && info.dli_fname != nullptr) {
    dirs.push_back(Dirname(info.dli_fname));
  }
  Dl_info ort{};
  if (dladdr(reinterpret_cast<const void*>(&OrtGetApiBase), &ort) != 0 && ort.dli_fname != nullptr) {
    std::string dir = Dirname(ort.dli_fname);
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end()) dirs.push_back(dir);
  }
  return dirs;
}

const char* LibraryFile(ProviderKind kind) {
  return kind == ProviderKind::TensorRt ? "libonnxruntime_providers_tensorrt.so" : "libonnxruntime_providers_cuda.so";
}

// Registers the provider's plugin EP library with the env and picks its EP device for
// config.deviceId. Throws with a clear message (the dlopen error, the missing device) on failure;
// a library that was registered but has no usable device is unregistered again.
ActiveProvider RegisterPlugin(Ort::Env& env, ProviderKind kind, const NativeConfig& config) {
  std::string path;
  std::vector<std::string> dirs = ProviderLibraryDirs();
  for (const std::string& dir : dirs) {
    std::string candidate = dir + "/" + LibraryFile(kind);
    if (access(candidate.c_str(), R_OK) == 0) {
      path = candidate;
      break;
    }
  }
  if (path.empty()) {
    std::string where = dirs.empty() ? std::string("(addon directory unknown)") : dirs.front();
    throw std::runtime_error(std::string(LibraryFile(kind)) + " not found beside the addon in " + where +
                             " (install the optional package com.github.asus4.onnxruntime.linux-x64-gpu and rebuild)");
  }
  const std::string registration = std::string("catcomfort_") + ProviderName(kind);
  try {
    env.RegisterExecutionProviderLibrary(registration.c_str(), path);
  } catch (const std::exception& e) {
    throw std::runtime_error("plugin library " + path + " failed to load: " + e.what());
  }
  try {
    const std::string epName = OrtProviderName(kind);
    std::vector<Ort::ConstEpDevice> matching;
    std::string seen;
    for (const Ort::ConstEpDevice& device : env.GetEpDevices()) {
      const char* name = device.EpName();
      if (name != nullptr && epName == name) {
        matching.push_back(device);
      } else if (name != nullptr && seen.find(name) == std::string::npos) {
        seen += seen.empty() ? name : std::string(", ") + name;
      }
    }
    if (matching.empty()) {
      throw std::runtime_error("plugin library " + path + " loaded but reports no " + epName + " device (no GPU?" +
                               (seen.empty() ? std::string(")") : "; EP devices seen: " + seen + ")"));
    }
    if (static_cast<size_t>(config.deviceId) >= matching.size()) {
      throw std::runtime_error(epName + " has " + std::to_string(matching.size()) + " device(s); deviceId " +
                               std::to_string(config.deviceId) + " is out of range");
    }
    ActiveProvider provider;
    provider.kind = kind;
    provider.plugin = true;
    provider.devices.push_back(matching[static_cast<size_t>(config.deviceId)]);
    Ort::SessionOptions probe;
    AppendPlugin(probe, env, provider, config);
    return provider;
  } catch (...) {
    try {
      env.UnregisterExecutionProviderLibrary(registration.c_str());
    } catch (...) {
    }
    throw;
  }
}

bool NotInBuild(const std::string& message) { return message.find("not enabled in this build") != std::string::npos; }

// Classic append first; a CPU-only libonnxruntime says "not enabled in this build", and then the
// provider's plugin EP library beside the addon is tried. One reason per provider on failure.
ProviderStatus Probe(Ort::Env& env, ProviderKind kind, const NativeConfig& config, ActiveProvider* active) {
  ProviderStatus status;
  status.name = ProviderName(kind);
  if (kind == ProviderKind::Cpu) {
    status.active = true;
    return status;
  }
  std::string classicError;
  try {
    Ort::SessionOptions probe;
    AppendClassic(probe, kind, config);  // loads the provider library and its CUDA dependencies
    active->kind = kind;
    active->plugin = false;
    status.active = true;
    return status;
  } catch (const std::exception& e) {
    classicError = e.what();
  } catch (...) {
    classicError = "provider failed to load";
  }
  if (classicError.empty()) classicError = "provider failed to load";
  if (!NotInBuild(classicError)) {
    status.reason = classicError;
    return status;
  }
  try {
    *active = RegisterPlugin(env, kind, config);
    status.active = true;
  } catch (const std::exception& e) {
    status.reason = std::string(OrtProviderName(kind)) + " is not built into this ONNX Runtime; " + e.what();
  } catch (...) {
    status.reason = std::string(OrtProviderName(kind)) + " is not built into this ONNX Runtime; its plugin library failed";
  }
  return status;
}

bool SameConfig(const NativeConfig& a, const NativeConfig& b) {
  return a.providers == b.providers && a.deviceId == b.deviceId && a.trtCacheDir == b.trtCacheDir &&
         a.trtFp16 == b.trtFp16 && a.cudnnConvAlgoSearch == b.cudnnConvAlgoSearch && a.pinnedMemory == b.pinnedMemory && a.poolThreads == b.poolThreads &&
         a.intraOpThreads == b.intraOpThreads && a.cpuArena == b.cpuArena;
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
  const MallocPolicy malloc = KeepMallocCompact();
  runtime->info.mallocAllocator = malloc.allocator;
  runtime->info.mallocOwnMappingBytes = malloc.ownMappingBytes;
  runtime->info.mallocArenaMax = malloc.arenaMax;
  runtime->info.ortVersion = Ort::GetVersionString();
  for (ProviderKind kind : config.providers) {
    ActiveProvider active;
    ProviderStatus status = Probe(*runtime->env, kind, config, &active);
    if (status.active && kind != ProviderKind::Cpu) runtime->activeProviders.push_back(std::move(active));
    runtime->info.providers.push_back(std::move(status));
  }
  runtime->pool = std::make_unique<ThreadPool>(static_cast<size_t>(config.poolThreads));
  g_runtime = runtime.release();
  return *g_runtime;
}

Ort::SessionOptions MakeSessionOptions(const Runtime& runtime, int intraOpThreads) {
  Ort::SessionOptions options;
  options.SetGraphOptimizationLevel(GraphOptimizationLevel::ORT_ENABLE_ALL);
  options.SetIntraOpNumThreads(intraOpThreads > 0 ? intraOpThreads : runtime.config.intraOpThreads);
  options.SetInterOpNumThreads(1);
  options.SetExecutionMode(ExecutionMode::ORT_SEQUENTIAL);
  // The pool already keeps the cores busy; spinning intra-op threads would only steal from it.
  options.AddConfigEntry("session.intra_op.allow_spinning", "0");
  if (!runtime.config.cpuArena) options.DisableCpuMemArena();
  for (const ActiveProvider& provider : runtime.activeProviders) {
    AppendProvider(options, *runtime.env, provider, runtime.config);
  }
  return options;
}

void ShutdownRuntime() {
  Runtime* runtime = GetRuntime();
  if (runtime != nullptr && runtime->pool) runtime->pool->Shutdown();
}

}  // namespace catcomfort
