// Per-image geometry of an analysis: the detector views' content (the decoded image resized once
// at the plain scale and/or at half of it) and where each view sits on the detector's canvas; the
// classifier's crop of a cat (its box plus margin, in source pixels) and where it sits in the
// classifier input. Pixels and rectangles only: what is kept or reported is native/pipeline.cc's.
#pragma once

#include <array>
#include <cstddef>

#include "decode.h"
#include "decoder.h"
#include "items.h"
#include "preprocess.h"
#include "specs.h"

namespace catcomfort {

// The detector content of one image, shared by its views.
struct ViewContent {
  ResizedImage plain;  // at the plain scale (the plain and flip views)
  ResizedImage half;   // ... and at half of it (the half views)
  Placement placements[4];  // per view (at most 4): where its content sits, and the way back
};

// The content and placements of the spec's views of `image` (decoded pixels).
ViewContent MakeViews(const DetectorSpec& det, const RgbImage& image);

// The detector tensor of one view.
void WriteViewTensor(const DetectorSpec& det, const ViewContent& views, size_t view, float* dst);

// The classifier's crop of a cat: its box plus cropMargin on each side, in whole source pixels,
// clamped to the image (at least one pixel).
struct Crop {
  double x1 = 0, y1 = 0, x2 = 0, y2 = 0;
};

Crop ClassifierCrop(const CatCandidate& cat, double cropMargin, double width, double height);

// Where the crop lands in the classifier input (its content size there).
Placement CropPlacement(const Crop& c, const PreprocessSpec& classifier);

// The classifier tensor of a crop of `image` (decoded pixels; the crop in source pixels).
void WriteCropTensor(const RgbImage& image, const Crop& c, const PreprocessSpec& classifier, float* dst);

// A detector box on a view's canvas -> decoded pixels (a flipped view's x swapped back).
void ToDecodedPixels(const Placement& view, Detection& d);

// A box in decoded pixels -> whole source pixels, clamped to the image.
std::array<int, 4> SourceBox(const RgbImage& image, const Detection& d);

}  // namespace catcomfort
