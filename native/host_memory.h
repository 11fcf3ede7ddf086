// Where session inputs are staged and outputs land (RunBatch in session.cc): the page-locked
// ("pinned") host memory of the first active GPU provider when it offers one, so copies to and
// from the device run by DMA without a bounce buffer; plain CPU memory otherwise.
#pragma once

#include <memory>
#include <optional>

#include <onnxruntime_cxx_api.h>

#include "runtime.h"

namespace catcomfort {

class HostMemory {
 public:
  // For a session created with MakeSessionOptions(runtime); CPU memory when the config turns pinned
  // memory off or the provider has no pinned allocator for the session.
  static HostMemory For(const Runtime& runtime, const Ort::Session& session);

  bool Pinned() const { return pinned_; }
  OrtAllocator* Allocator() const { return owned_ ? static_cast<OrtAllocator*>(*owned_) : shared_; }
  const OrtMemoryInfo* Info() const { return ownedInfo_ ? static_cast<const OrtMemoryInfo*>(*ownedInfo_) : sharedInfo_; }

 private:
  bool pinned_ = false;
  std::optional<Ort::MemoryInfo> ownedInfo_;  // classic providers and CPU
  std::unique_ptr<Ort::Allocator> owned_;     // classic providers: the session's pinned allocator
  const OrtMemoryInfo* sharedInfo_ = nullptr;  // plugin providers: owned by the EP device
  OrtAllocator* shared_ = nullptr;             // plugin providers and CPU: owned by the env / ORT
};

}  // namespace catcomfort
