// Each request used to allocate and free several image-sized blocks (a decoded photo of 0.1-3 MiB,
// the views resized from it, the file decoded from base64) on whichever thread ran it. Under a mixed
// load glibc's arenas kept the freed space, split around smaller blocks still in use, and RSS grew
// in steps (docs/performance-log.md "Memory that flattens"). Pooled here instead: a block is a
// mapping of its own, outside every arena, handed to the next request of its size class; idle
// ones are kept up to kIdleCapBytes and unmapped beyond it, and those no request needed over
// kWindowTakes takes (or between two malloc trims) are unmapped then, so a burst's blocks do not
// stay. Reused blocks are already faulted in.
#include "image_blocks.h"

#include <sys/mman.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

namespace catcomfort {
namespace {

constexpr std::size_t kIdleCapBytes = 64u * 1024 * 1024;
// About 40 analyses of a small photo (each takes its file, its decoded photo, views and crops).
constexpr uint64_t kWindowTakes = 256;

struct SizeClass {
  std::vector<void*> idle;
  std::size_t fewestIdle = 0;  // since the last release: blocks of this size no request needed
};

struct Pool {
  std::mutex mutex;
  std::map<std::size_t, SizeClass> bySize;
  ImageBlockCounts counts;
  uint64_t takenAtRelease = 0;
};

using Blocks = std::vector<std::pair<void*, std::size_t>>;

// Under the pool's lock: takes out the idle blocks no request took since the last release.
Blocks TakeOutUnused(Pool& pool) {
  Blocks unused;
  for (auto& [size, blocks] : pool.bySize) {
    for (std::size_t i = 0; i < blocks.fewestIdle; ++i) {
      unused.emplace_back(blocks.idle.back(), size);
      blocks.idle.pop_back();
      pool.counts.idleBytes -= size;
      pool.counts.mappedBytes -= size;
    }
    blocks.fewestIdle = blocks.idle.size();
  }
  pool.takenAtRelease = pool.counts.taken;
  return unused;
}

void Unmap(const Blocks& blocks) {
  for (const auto& [block, size] : blocks) munmap(block, size);
}

Pool& Shared() {
  static Pool* pool = new Pool();  // never destroyed: blocks may be given back during exit
  return *pool;
}

}  // namespace

std::size_t PooledBlockBytes(std::size_t bytes) {
  std::size_t power = kPooledFromBytes;
  while (power * 2 <= bytes) power *= 2;
  const std::size_t step = power / 8;
  return (bytes + step - 1) / step * step;
}

void* TakeImageBlock(std::size_t bytes) {
  const std::size_t size = PooledBlockBytes(bytes);
  Pool& pool = Shared();
  void* block = nullptr;
  Blocks unused;
  {
    std::lock_guard<std::mutex> lock(pool.mutex);
    ++pool.counts.taken;
    auto found = pool.bySize.find(size);
    if (found != pool.bySize.end() && !found->second.idle.empty()) {
      SizeClass& blocks = found->second;
      block = blocks.idle.back();
      blocks.idle.pop_back();
      blocks.fewestIdle = std::min(blocks.fewestIdle, blocks.idle.size());
      pool.counts.idleBytes -= size;
      ++pool.counts.reused;
    } else {
      pool.counts.mappedBytes += size;
    }
    if (pool.counts.taken >= pool.takenAtRelease + kWindowTakes) unused = TakeOutUnused(pool);
  }
  Unmap(unused);
  if (block != nullptr) return block;
  block = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (block == MAP_FAILED) {
    std::lock_guard<std::mutex> lock(pool.mutex);
    --pool.counts.taken;
    pool.counts.mappedBytes -= size;
    throw std::bad_alloc();
  }
  return block;
}

void GiveImageBlock(void* block, std::size_t bytes) noexcept {
  const std::size_t size = PooledBlockBytes(bytes);
  Pool& pool = Shared();
  {
    std::lock_guard<std::mutex> lock(pool.mutex);
    if (pool.counts.idleBytes + size <= kIdleCapBytes) {
      pool.bySize[size].idle.push_back(block);
      pool.counts.idleBytes += size;
      return;
    }
    pool.counts.mappedBytes -= size;
  }
  munmap(block, size);
}

void ReleaseUnusedImageBlocks() {
  Pool& pool = Shared();
  Blocks unused;
  {
    std::lock_guard<std::mutex> lock(pool.mutex);
    unused = TakeOutUnused(pool);
  }
  Unmap(unused);
}

ImageBlockCounts CountImageBlocks() {
  Pool& pool = Shared();
  std::lock_guard<std::mutex> lock(pool.mutex);
  return pool.counts;
}

}  // namespace catcomfort
