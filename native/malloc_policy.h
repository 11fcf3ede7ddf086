// How glibc's malloc keeps memory under the service's many threads: see malloc_policy.cc.
#pragma once

#include <cstddef>

namespace catcomfort {

struct MallocPolicy {
  // Blocks from this size get mappings of their own; 0: glibc's own rule (the environment set one, or not glibc).
  std::size_t ownMappingBytes = 0;
  // The most arenas threads allocate from; 0: glibc's own (8 per core, or the environment's).
  int arenaMax = 0;
};

// Sets the policy once per process (later calls return what was set), leaving alone each part the
// operator set in the environment (MALLOC_MMAP_THRESHOLD_, MALLOC_ARENA_MAX or GLIBC_TUNABLES).
MallocPolicy KeepMallocCompact();

}  // namespace catcomfort
