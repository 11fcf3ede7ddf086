// The service's malloc. bin/catcomfort-service preloads jemalloc where it is installed, which reuses
// freed pages without fragmenting its memory as glibc's arenas do below, so RSS holds a level under
// the image-sized churn (docs/performance-log.md "jemalloc against glibc's malloc"). Without it:
// glibc's malloc under the service's threads (the main thread, the HTTP front's, the addon's pool,
// ONNX Runtime's and libvips's, Node's own). By default glibc gives threads up to 8 arenas per core,
// and raises its mmap threshold to the size of every mapped block freed, up to 32 MiB: after the
// first phone photo's request body is freed, blocks that large are carved from the arena of
// whichever thread asks, and what is freed stays there, fragmented, for that arena alone. Under a
// mixed load the arenas of a 2-core VM held 233 MiB and RSS grew for as long as it was measured.
// So (docs/performance-log.md "Memory that flattens"):
// - blocks from 4 MiB (request bodies of 12 MP photos) get mappings of their own, returned when freed;
//   smaller ones (tensors, libvips's buffers) are reused from the arenas, since mapping and faulting
//   them in each time made every analysis 2-5 ms slower on that VM; the addon's own image-sized
//   blocks (decoded photos, views, base64-decoded files) come from a pool instead (image_blocks.h);
// - threads share one arena per core (at least 2), so freed space serves the next thread that asks.
//   Set here, it binds only threads that allocate for the first time afterwards; the launcher
//   (bin/catcomfort-service) sets MALLOC_ARENA_MAX before Node starts, which binds them all.
#include "malloc_policy.h"

#include "image_blocks.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>

#if defined(__GLIBC__)
#include <dlfcn.h>
#include <malloc.h>
#include <sched.h>
#endif

#include <unistd.h>

namespace catcomfort {

#if defined(__GLIBC__)
namespace {

constexpr std::size_t kOwnMappingBytes = 4 * 1024 * 1024;

// What the environment says of a setting: absent, present (left alone), and its value when it is
// a plain variable holding a positive int (0 otherwise: named in GLIBC_TUNABLES, or unreadable).
struct FromEnvironment {
  bool present = false;
  int value = 0;
};

FromEnvironment Read(const char* variable, const char* tunable) {
  FromEnvironment out;
  if (const char* text = std::getenv(variable)) {
    out.present = true;
    char* end = nullptr;
    errno = 0;
    const long value = std::strtol(text, &end, 10);
    if (errno == 0 && end != text && *end == '\0' && value > 0 && value <= INT_MAX) out.value = static_cast<int>(value);
    return out;
  }
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  out.present = tunables != nullptr && std::strstr(tunables, tunable) != nullptr;
  return out;
}

// jemalloc's mallctl when jemalloc is the process's malloc (preloaded); null otherwise.
using Mallctl = int (*)(const char*, void*, std::size_t*, void*, std::size_t);
Mallctl JemallocControl() {
  static const Mallctl control = reinterpret_cast<Mallctl>(dlsym(RTLD_DEFAULT, "mallctl"));
  return control;
}

// Cores this process may run on (its affinity, as nproc counts them).
int Cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
}

}  // namespace
#endif

MallocPolicy KeepMallocCompact() {
  static std::once_flag once;
  static MallocPolicy inForce;
  std::call_once(once, [] {
#if defined(__GLIBC__)
    if (JemallocControl() != nullptr) {
      inForce.allocator = "jemalloc";
      return;
    }
    inForce.allocator = "glibc";
    const FromEnvironment threshold = Read("MALLOC_MMAP_THRESHOLD_", "glibc.malloc.mmap_threshold");
    if (threshold.present) {
      inForce.ownMappingBytes = static_cast<std::size_t>(threshold.value);
    } else if (mallopt(M_MMAP_THRESHOLD, static_cast<int>(kOwnMappingBytes)) == 1) {
      inForce.ownMappingBytes = kOwnMappingBytes;
    }
    const FromEnvironment arenas = Read("MALLOC_ARENA_MAX", "glibc.malloc.arena_max");
    const int perCore = std::max(2, Cores());
    if (arenas.present) {
      inForce.arenaMax = arenas.value;
    } else if (mallopt(M_ARENA_MAX, perCore) == 1) {
      inForce.arenaMax = perCore;
    }
#endif
  });
  return inForce;
}

namespace {

// Resident bytes of this process (/proc/self/statm's second field); 0 where it cannot be read.
int64_t ResidentBytes() {
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return 0;
  long long size = 0;
  long long resident = 0;
  const bool read = std::fscanf(statm, "%lld %lld", &size, &resident) == 2;
  std::fclose(statm);
  return read ? resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

}  // namespace

TrimOutcome TrimFreePages() {
  TrimOutcome out;
  out.residentBefore = ResidentBytes();
  const auto started = std::chrono::steady_clock::now();
  ReleaseUnusedImageBlocks();
#if defined(__GLIBC__)
  if (const Mallctl control = JemallocControl()) {
    control("arena.4096.purge", nullptr, nullptr, nullptr, 0);  // 4096: MALLCTL_ARENAS_ALL
  } else {
    malloc_trim(0);
  }
#endif
  out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  out.residentAfter = ResidentBytes();
  return out;
}

MallocBytes ReadMallocBytes() {
  MallocBytes out;
#if defined(__GLIBC__)
  const Mallctl control = JemallocControl();
  if (control == nullptr) return out;
  uint64_t epoch = 1;
  std::size_t epochSize = sizeof(epoch);
  control("epoch", &epoch, &epochSize, &epoch, epochSize);  // refreshes the stats.* below
  const auto read = [&](const char* name, int64_t& into) {
    std::size_t value = 0;
    std::size_t size = sizeof(value);
    if (control(name, &value, &size, nullptr, 0) != 0) return false;
    into = static_cast<int64_t>(value);
    return true;
  };
  int64_t dirtyPages = 0;
  int64_t pageBytes = 0;
  out.known = read("stats.allocated", out.allocated) && read("stats.active", out.active) &&
              read("stats.resident", out.resident) && read("stats.retained", out.retained) &&
              read("stats.arenas.4096.pdirty", dirtyPages) && read("arenas.page", pageBytes);
  out.dirty = dirtyPages * pageBytes;
#endif
  return out;
}

}  // namespace catcomfort
