// glibc's malloc under the service's threads (the main thread, the HTTP front's, the addon's pool,
// ONNX Runtime's and libvips's, Node's own). By default glibc gives threads up to 8 arenas per core,
// and raises its mmap threshold to the size of every mapped block freed, up to 32 MiB: after the
// first phone photo's request body is freed, blocks that large are carved from the arena of
// whichever thread asks, and what is freed stays there, fragmented, for that arena alone. Under a
// mixed load the arenas of a 2-core VM held 233 MiB and RSS grew for as long as it was measured.
// So (docs/performance-log.md "Memory that flattens"):
// - blocks from 4 MiB (request bodies of 12 MP photos) get mappings of their own, returned when freed;
//   smaller ones (decoded photos, tensors, libvips's buffers) are reused from the arenas, since mapping
//   and faulting them in each time made every analysis 2-5 ms slower on that VM;
// - threads share one arena per core (at least 2), so freed space serves the next thread that asks.
#include "malloc_policy.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace catcomfort {

namespace {

constexpr std::size_t kOwnMappingBytes = 4 * 1024 * 1024;

// The operator's own choice: the variable, or the tunable in GLIBC_TUNABLES.
bool SetByEnvironment(const char* variable, const char* tunable) {
  if (std::getenv(variable) != nullptr) return true;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return tunables != nullptr && std::strstr(tunables, tunable) != nullptr;
}

}  // namespace

MallocPolicy KeepMallocCompact() {
  static std::once_flag once;
  static MallocPolicy applied;
  std::call_once(once, [] {
#if defined(__GLIBC__)
    if (!SetByEnvironment("MALLOC_MMAP_THRESHOLD_", "glibc.malloc.mmap_threshold") &&
        mallopt(M_MMAP_THRESHOLD, static_cast<int>(kOwnMappingBytes)) == 1) {
      applied.ownMappingBytes = kOwnMappingBytes;
    }
    const int arenas = std::max(2, static_cast<int>(std::thread::hardware_concurrency()));
    if (!SetByEnvironment("MALLOC_ARENA_MAX", "glibc.malloc.arena_max") && mallopt(M_ARENA_MAX, arenas) == 1) applied.arenaMax = arenas;
#endif
  });
  return applied;
}

}  // namespace catcomfort
