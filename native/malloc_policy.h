// How glibc's malloc keeps memory under the service's many threads: see malloc_policy.cc.
#pragma once

#include <cstddef>
#include <cstdint>

namespace catcomfort {

struct MallocPolicy {
  // The malloc serving the process: "jemalloc" (bin/catcomfort-service preloads it when installed;
  // the parts below are then 0, glibc's malloc being unused) or "glibc" (or "other" elsewhere).
  const char* allocator = "other";
  // Blocks from this size get mappings of their own; 0: glibc's own rule (set in GLIBC_TUNABLES, or not glibc).
  std::size_t ownMappingBytes = 0;
  // The most arenas threads allocate from; 0: glibc's own (8 per core, or set in GLIBC_TUNABLES).
  int arenaMax = 0;
};

// Sets the policy once per process (later calls return what is in force); under glibc's malloc, leaving alone each part
// the environment sets (MALLOC_MMAP_THRESHOLD_, MALLOC_ARENA_MAX or GLIBC_TUNABLES), whose values
// it reports when given as plain variables holding a positive number (0 otherwise). bin/catcomfort-service sets MALLOC_ARENA_MAX before
// Node starts, so the threads Node starts before the addon loads share the arenas too.
MallocPolicy KeepMallocCompact();

// What one TrimFreePages() call did: the process's resident bytes before and after, and its time.
struct TrimOutcome {
  int64_t residentBefore = 0;
  int64_t residentAfter = 0;
  double ms = 0;
};

// Unmaps the image blocks no request needed since the last call (ReleaseUnusedImageBlocks), then
// gives back to the system the pages that free blocks cover in every arena: glibc's malloc_trim(0)
// (the main arena's heap can only shrink from its top, so pages freed below a block still in use
// stay resident otherwise), or jemalloc's purge of every arena. Elsewhere it only measures.
TrimOutcome TrimFreePages();

// jemalloc's own account of its memory (its stats.* and the dirty pages of all arenas), refreshed
// at each call; `known` is false under another malloc.
struct MallocBytes {
  bool known = false;
  int64_t allocated = 0;  // in blocks handed out
  int64_t active = 0;     // in pages holding such blocks
  int64_t dirty = 0;      // in free pages kept resident until they decay
  int64_t resident = 0;   // in pages resident, jemalloc's metadata included
  int64_t retained = 0;   // in address space kept but given back to the system
};

MallocBytes ReadMallocBytes();

}  // namespace catcomfort
