// Large blocks out of glibc's arenas. Each thread that allocates gets an arena (up to 8 per core),
// and glibc raises its mmap threshold to the size of every mapped block freed, up to 32 MiB: after the
// first request body or decoded photo is freed, blocks of that size (bodies, pixels, tensors) are
// carved from the arena of whichever thread asks, and what is freed there stays, fragmented, in
// that arena. Under mixed load RSS grew that way for as long as it was measured (docs/performance-log.md
// "Memory that flattens"). A fixed threshold keeps large blocks on mappings of their own, returned
// to the system when freed, and also stops the trim threshold from following it.
#include "malloc_policy.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace catcomfort {

namespace {

// The operator's own choice: MALLOC_MMAP_THRESHOLD_ or glibc.malloc.mmap_threshold in GLIBC_TUNABLES.
bool ThresholdSetByEnvironment() {
  if (std::getenv("MALLOC_MMAP_THRESHOLD_") != nullptr) return true;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return tunables != nullptr && std::strstr(tunables, "glibc.malloc.mmap_threshold") != nullptr;
}

}  // namespace

std::size_t KeepLargeBlocksOutOfArenas() {
  static std::once_flag once;
  static std::size_t applied = 0;
  std::call_once(once, [] {
#if defined(__GLIBC__)
    if (!ThresholdSetByEnvironment() && mallopt(M_MMAP_THRESHOLD, static_cast<int>(kOwnMappingBytes)) == 1) applied = kOwnMappingBytes;
#endif
  });
  return applied;
}

}  // namespace catcomfort
