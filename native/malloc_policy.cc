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
//   Set here, it binds only threads that allocate for the first time afterwards; the launcher
//   (bin/catcomfort-service) sets MALLOC_ARENA_MAX before Node starts, which binds them all.
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

// The environment's choice: the variable's value (-1 when only GLIBC_TUNABLES names the tunable), or 0.
long FromEnvironment(const char* variable, const char* tunable) {
  if (const char* value = std::getenv(variable)) return std::strtol(value, nullptr, 10);
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  return tunables != nullptr && std::strstr(tunables, tunable) != nullptr ? -1 : 0;
}

}  // namespace

MallocPolicy KeepMallocCompact() {
  static std::once_flag once;
  static MallocPolicy inForce;
  std::call_once(once, [] {
#if defined(__GLIBC__)
    const long threshold = FromEnvironment("MALLOC_MMAP_THRESHOLD_", "glibc.malloc.mmap_threshold");
    if (threshold > 0) inForce.ownMappingBytes = static_cast<std::size_t>(threshold);
    if (threshold == 0 && mallopt(M_MMAP_THRESHOLD, static_cast<int>(kOwnMappingBytes)) == 1) inForce.ownMappingBytes = kOwnMappingBytes;
    const long arenas = FromEnvironment("MALLOC_ARENA_MAX", "glibc.malloc.arena_max");
    const int perCore = std::max(2, static_cast<int>(std::thread::hardware_concurrency()));
    if (arenas > 0) inForce.arenaMax = static_cast<int>(arenas);
    if (arenas == 0 && mallopt(M_ARENA_MAX, perCore) == 1) inForce.arenaMax = perCore;
#endif
  });
  return inForce;
}

}  // namespace catcomfort
