// Preprocessing: resampling (antialiased bilinear) and writing normalised tensors in place.
#pragma once

#include <cstdint>
#include <vector>

#include "decode.h"
#include "specs.h"

namespace catcomfort {

struct ResizedImage {
  int width = 0;
  int height = 0;
  ImageBytes pixels;  // interleaved RGB (a pooled block: image_blocks.h)
};

// Resamples the source rectangle [x, x + w) x [y, y + h) of src to outWidth x outHeight with a
// triangle (bilinear) filter whose support widens when shrinking (like Pillow's BILINEAR), so
// large downscales average instead of aliasing.
ResizedImage ResizeRgb(const RgbImage& src, double x, double y, double w, double h, int outWidth, int outHeight);
// Downscales src, itself the output of a ResizeRgb downscale, to outWidth x outHeight with a
// narrower triangle (radius sqrt(r^2 - 1) of src's pixels for a ratio r, e.g. 1.73 for 2:1), so
// that its blur and src's together match a direct ResizeRgb of the original to that size (same
// pixel centres, matching variance) at a fraction of the cost. Ratios in (1, 2] are the use.
ResizedImage ReduceRgb(const ResizedImage& src, int outWidth, int outHeight);

// Where the resized image sits on the model's canvas, and how to map canvas pixels back.
struct Placement {
  int offsetX = 0;
  int offsetY = 0;
  int width = 0;   // resized content size on the canvas
  int height = 0;
  double scaleX = 1;  // content pixels per source pixel
  double scaleY = 1;
  bool flip = false;

  // Canvas coordinates -> source coordinates (before the crop origin is added).
  double ToSourceX(double u) const { return flip ? (width - (u - offsetX)) / scaleX : (u - offsetX) / scaleX; }
  double ToSourceY(double v) const { return (v - offsetY) / scaleY; }
};

// factor: 1 for the plain view, 0.5 for the half views (always centred on the canvas).
Placement PlaceOnCanvas(int srcWidth, int srcHeight, const PreprocessSpec& spec, double factor, bool center, bool flip);

// Writes one image (resized content, already placed by `placement`) into dst, a tensor slot of
// 3 * spec.width * spec.height floats in spec.layout, applying channel order and
// value' = (value * scale - mean[c]) / std[c]; the rest of the canvas gets padValue (normalised
// the same way).
void WriteTensor(const ResizedImage& content, const Placement& placement, const PreprocessSpec& spec, float* dst);

}  // namespace catcomfort
