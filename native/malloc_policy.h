// How glibc's malloc keeps memory under the service's many threads: see malloc_policy.cc.
#pragma once

#include <cstddef>

namespace catcomfort {

struct MallocPolicy {
  // Blocks from this size get mappings of their own; 0: glibc's own rule (set in GLIBC_TUNABLES, or not glibc).
  std::size_t ownMappingBytes = 0;
  // The most arenas threads allocate from; 0: glibc's own (8 per core, or set in GLIBC_TUNABLES).
  int arenaMax = 0;
};

// Sets the policy once per process (later calls return what is in force), leaving alone each part
// the environment sets (MALLOC_MMAP_THRESHOLD_, MALLOC_ARENA_MAX or GLIBC_TUNABLES), whose values
// it reports when given as plain variables holding a positive number (0 otherwise). bin/catcomfort-service sets MALLOC_ARENA_MAX before
// Node starts, so the threads Node starts before the addon loads share the arenas too.
MallocPolicy KeepMallocCompact();

}  // namespace catcomfort
