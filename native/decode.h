// Image decoding with libvips: bytes -> upright 8-bit interleaved RGB in memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include <glib.h>

namespace catcomfort {

struct GFreeDeleter {
  void operator()(uint8_t* p) const { g_free(p); }
};

struct RgbImage {
  int width = 0;
  int height = 0;
  // width * height * 3, row-major, interleaved R,G,B; the buffer libvips wrote (no extra copy).
  std::unique_ptr<uint8_t[], GFreeDeleter> pixels;
};

// Throws ItemError: undecodable, unsupported_format, too_many_pixels, empty_image.
RgbImage DecodeImage(const uint8_t* data, size_t length, uint64_t maxPixels);

}  // namespace catcomfort
