// Image decoding with libvips: bytes -> upright 8-bit interleaved RGB in memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "image_blocks.h"

namespace catcomfort {

struct RgbImage {
  int width = 0;
  int height = 0;
  // The upright source image's size (EXIF orientation applied): what clients are told and boxes
  // are given in. Larger than width x height when a JPEG was decoded with shrink-on-load.
  int sourceWidth = 0;
  int sourceHeight = 0;
  int shrink = 1;  // JPEG shrink-on-load factor used: 1 (full size), 2, 4 or 8
  // width * height * 3, row-major, interleaved R,G,B; libvips writes it in place (no extra copy).
  ImageBytes pixels;
};

// Source pixels per decoded pixel along each axis (1 without shrink-on-load).
inline double SourceScaleX(const RgbImage& image) { return static_cast<double>(image.sourceWidth) / image.width; }
inline double SourceScaleY(const RgbImage& image) { return static_cast<double>(image.sourceHeight) / image.height; }

// Picks the JPEG shrink-on-load factor (1, 2, 4 or 8) from the upright source size.
using ShrinkChooser = std::function<int(int width, int height)>;

// The largest factor in {8, 4, 2} that still leaves at least needWidth x needHeight of a
// width x height region (width / factor >= needWidth, ...), else 1.
int LargestShrink(double width, double height, int needWidth, int needHeight);

// JPEGs are decoded by libjpeg at 1/shrink of their size (scaled IDCT: far less work than a
// full decode), with shrink from chooseShrink (none: full size); other formats at full size.
// Throws ItemError: undecodable, unsupported_format, too_many_pixels, empty_image.
RgbImage DecodeImage(const uint8_t* data, size_t length, uint64_t maxPixels,
                     const ShrinkChooser& chooseShrink = nullptr);

}  // namespace catcomfort
