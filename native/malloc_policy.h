// How glibc's malloc keeps large blocks: see malloc_policy.cc.
#pragma once

#include <cstddef>

namespace catcomfort {

// Blocks of at least this many bytes get mappings of their own, given back when freed.
constexpr std::size_t kOwnMappingBytes = 128 * 1024;

// Sets the rule once per process (later calls do nothing), unless the operator set glibc's
// threshold in the environment. Returns the threshold in force by our hand, or 0 when left alone.
std::size_t KeepLargeBlocksOutOfArenas();

}  // namespace catcomfort
