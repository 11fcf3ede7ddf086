// The views and crops of native/geometry.h.
#include "geometry.h"

#include <algorithm>
#include <cmath>

namespace catcomfort {

namespace {

bool IsHalf(DetectorView v) { return v == DetectorView::Half || v == DetectorView::HalfFlip; }

bool NeedsHalf(const std::vector<DetectorView>& views) { return std::any_of(views.begin(), views.end(), IsHalf); }

bool NeedsPlain(const std::vector<DetectorView>& views) {
  return std::any_of(views.begin(), views.end(),
                     [](DetectorView v) { return v == DetectorView::Plain || v == DetectorView::Flip; });
}

}  // namespace

ViewContent MakeViews(const DetectorSpec& det, const RgbImage& image) {
  ViewContent out;
  const PreprocessSpec& pp = det.preprocess;
  const bool center = pp.anchor == Anchor::Center;
  const int w = image.width;
  const int h = image.height;
  for (size_t v = 0; v < det.views.size() && v < 4; ++v) {
    DetectorView view = det.views[v];
    const bool half = IsHalf(view);
    const bool flip = view == DetectorView::Flip || view == DetectorView::HalfFlip;
    // The half views are always centred on the canvas.
    out.placements[v] = PlaceOnCanvas(w, h, pp, half ? 0.5 : 1.0, half || center, flip);
  }
  const bool needsPlain = NeedsPlain(det.views);
  if (needsPlain) {
    Placement p = PlaceOnCanvas(w, h, pp, 1.0, false, false);
    out.plain = ResizeRgb(image, 0, 0, w, h, p.width, p.height);
  }
  if (NeedsHalf(det.views)) {
    // Same size as PlaceOnCanvas gives the half views (their placements above map boxes back).
    Placement p = PlaceOnCanvas(w, h, pp, 0.5, true, false);
    if (needsPlain && out.plain.width <= w && out.plain.height <= h) {
      // From the plain content (a downscale) instead of the full-resolution image a second time:
      // the same pixel centres, and about the same blur, as a direct resize.
      out.half = ReduceRgb(out.plain, p.width, p.height);
    } else {
      out.half = ResizeRgb(image, 0, 0, w, h, p.width, p.height);
    }
  }
  return out;
}

void WriteViewTensor(const DetectorSpec& det, const ViewContent& views, size_t view, float* dst) {
  WriteTensor(IsHalf(det.views[view]) ? views.half : views.plain, views.placements[view], det.preprocess, dst);
}

Crop ClassifierCrop(const CatCandidate& cat, double cropMargin, double width, double height) {
  const double bw = cat.box[2] - cat.box[0];
  const double bh = cat.box[3] - cat.box[1];
  Crop c;
  c.x1 = std::clamp(std::floor(cat.box[0] - bw * cropMargin), 0.0, width - 1.0);
  c.y1 = std::clamp(std::floor(cat.box[1] - bh * cropMargin), 0.0, height - 1.0);
  c.x2 = std::clamp(std::ceil(cat.box[2] + bw * cropMargin), c.x1 + 1, width);
  c.y2 = std::clamp(std::ceil(cat.box[3] + bh * cropMargin), c.y1 + 1, height);
  return c;
}

Placement CropPlacement(const Crop& c, const PreprocessSpec& classifier) {
  return PlaceOnCanvas(static_cast<int>(c.x2 - c.x1), static_cast<int>(c.y2 - c.y1), classifier, 1.0,
                       classifier.anchor == Anchor::Center, false);
}

void WriteCropTensor(const RgbImage& image, const Crop& c, const PreprocessSpec& classifier, float* dst) {
  const Placement p = CropPlacement(c, classifier);
  // Source pixels -> decoded pixels (the identity without shrink-on-load).
  const double sx = SourceScaleX(image);
  const double sy = SourceScaleY(image);
  ResizedImage crop = ResizeRgb(image, c.x1 / sx, c.y1 / sy, (c.x2 - c.x1) / sx, (c.y2 - c.y1) / sy, p.width, p.height);
  WriteTensor(crop, p, classifier, dst);
}

void ToDecodedPixels(const Placement& view, Detection& d) {
  const double xa = view.ToSourceX(d.x1);
  const double xb = view.ToSourceX(d.x2);
  const double ya = view.ToSourceY(d.y1);
  const double yb = view.ToSourceY(d.y2);
  d.x1 = static_cast<float>(std::min(xa, xb));
  d.x2 = static_cast<float>(std::max(xa, xb));
  d.y1 = static_cast<float>(ya);
  d.y2 = static_cast<float>(yb);
}

std::array<int, 4> SourceBox(const RgbImage& image, const Detection& d) {
  const double w = image.sourceWidth;
  const double h = image.sourceHeight;
  const double sx = SourceScaleX(image);
  const double sy = SourceScaleY(image);
  return {static_cast<int>(std::lround(std::clamp<double>(d.x1 * sx, 0, w))),
          static_cast<int>(std::lround(std::clamp<double>(d.y1 * sy, 0, h))),
          static_cast<int>(std::lround(std::clamp<double>(d.x2 * sx, 0, w))),
          static_cast<int>(std::lround(std::clamp<double>(d.y2 * sy, 0, h)))};
}

}  // namespace catcomfort
