// Image-sized byte blocks (decoded photos, resized views, base64-decoded files) kept for reuse
// instead of freed: see image_blocks.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace catcomfort {

// Blocks from this size are pooled; smaller ones come from malloc as usual.
constexpr std::size_t kPooledFromBytes = 64 * 1024;

// The pooled size a request of `bytes` (>= kPooledFromBytes) gets: rounded up to an eighth of its
// power of two, so a block serves the next request of about its size.
std::size_t PooledBlockBytes(std::size_t bytes);
// A block of PooledBlockBytes(bytes): an idle one of that size, else a new mapping. Throws std::bad_alloc.
void* TakeImageBlock(std::size_t bytes);
// Returns a block taken with the same `bytes`; kept idle while the idle ones stay within the cap.
void GiveImageBlock(void* block, std::size_t bytes) noexcept;

// Unmaps the idle blocks that no request took since the last release (the fewest idle of each size
// in between). Runs by itself every 256 takes, and at each malloc trim.
void ReleaseUnusedImageBlocks();

struct ImageBlockCounts {
  uint64_t taken = 0;   // blocks handed out
  uint64_t reused = 0;  // of those, idle ones handed out again
  std::size_t idleBytes = 0;
  std::size_t mappedBytes = 0;  // idle and in use
};
ImageBlockCounts CountImageBlocks();

// A std allocator over the pool for byte vectors; elements are left uninitialised on resize
// (every user writes them all), so a reused block is not cleared first.
template <class T>
struct ImageBlockAllocator {
  using value_type = T;
  ImageBlockAllocator() = default;
  template <class U>
  ImageBlockAllocator(const ImageBlockAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    return static_cast<T*>(bytes >= kPooledFromBytes ? TakeImageBlock(bytes) : ::operator new(bytes));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    const std::size_t bytes = n * sizeof(T);
    if (bytes >= kPooledFromBytes) {
      GiveImageBlock(p, bytes);
    } else {
      ::operator delete(p);
    }
  }
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(static_cast<Args&&>(args)...);
  }
  template <class U>
  bool operator==(const ImageBlockAllocator<U>&) const noexcept { return true; }
  template <class U>
  bool operator!=(const ImageBlockAllocator<U>&) const noexcept { return false; }
};

using ImageBytes = std::vector<uint8_t, ImageBlockAllocator<uint8_t>>;

}  // namespace catcomfort
