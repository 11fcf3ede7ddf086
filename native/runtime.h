// Process-wide state set up once by configure(): libvips, the ORT environment, the addon's
// thread pool and the execution providers that passed their probe.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <onnxruntime_cxx_api.h>

#include "specs.h"
#include "thread_pool.h"

namespace catcomfort {

// A GPU provider that passed its probe: either compiled into libonnxruntime (classic append) or
// a plugin EP library registered with the env (appended through its EP devices).
struct ActiveProvider {
  ProviderKind kind = ProviderKind::Cpu;
  bool plugin = false;
  std::vector<Ort::ConstEpDevice> devices;  // plugin only; owned by the env while registered
};

struct Runtime {
  NativeConfig config;
  NativeInfo info;
  std::vector<ActiveProvider> activeProviders;  // GPU providers that loaded, in order; CPU is implicit
  std::unique_ptr<Ort::Env> env;
  std::unique_ptr<ThreadPool> pool;
};

// nullptr until Configure succeeded.
Runtime* GetRuntime();

// First call initialises everything; a later call with the same config returns the same
// runtime, with a different one it throws (the process-wide state cannot be redone).
Runtime& Configure(const NativeConfig& config);

// Session options for a pipeline's sessions: all graph optimisations, `intraOpThreads` intra-op
// threads (0: the config's), one inter-op thread, the active providers (then CPU), and ONNX
// Runtime's CPU arena only where the config asks for it.
Ort::SessionOptions MakeSessionOptions(const Runtime& runtime, int intraOpThreads = 0);

// Stops the pool (env teardown of the thread that configured the addon).
void ShutdownRuntime();

}  // namespace catcomfort
