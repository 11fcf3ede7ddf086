#include "host_memory.h"

namespace catcomfort {

HostMemory HostMemory::For(const Runtime& runtime, const Ort::Session& session) {
  HostMemory out;
  if (runtime.config.pinnedMemory && !runtime.activeProviders.empty()) {
    const ActiveProvider& gpu = runtime.activeProviders.front();
    try {
      if (gpu.plugin) {
        // The plugin EP's host-accessible memory, served by the env's shared allocator for it.
        const OrtApi& api = Ort::GetApi();
        const OrtMemoryInfo* info = api.EpDevice_MemoryInfo(gpu.devices.front(), OrtDeviceMemoryType_HOST_ACCESSIBLE);
        OrtAllocator* allocator = nullptr;
        if (info != nullptr) Ort::ThrowOnError(api.GetSharedAllocator(*runtime.env, info, &allocator));
        if (allocator != nullptr) {
          out.pinned_ = true;
          out.sharedInfo_ = info;
          out.shared_ = allocator;
          return out;
        }
      } else {
        // Classic CUDA and TensorRT providers register CUDA's pinned allocator with the session.
        Ort::MemoryInfo info("CudaPinned", OrtDeviceAllocator, runtime.config.deviceId, OrtMemTypeCPUOutput);
        auto allocator = std::make_unique<Ort::Allocator>(session, info);
        out.pinned_ = true;
        out.ownedInfo_ = std::move(info);
        out.owned_ = std::move(allocator);
        return out;
      }
    } catch (const Ort::Exception&) {
      // No pinned allocator for this session: plain CPU memory below.
    }
  }
  out.ownedInfo_ = Ort::MemoryInfo::CreateCpu(OrtDeviceAllocator, OrtMemTypeDefault);
  out.shared_ = Ort::AllocatorWithDefaultOptions();
  return out;
}

}  // namespace catcomfort
