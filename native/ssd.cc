#include "ssd.h"

#include <cmath>
#include <stdexcept>
#include <utility>

namespace catcomfort {

std::vector<SsdAnchor> SsdAnchors(const OutputSpec& output) {
  const std::vector<int> sizes = output.Ints("anchors.featureMapSizes", 1, 1024);
  const double minScale = output.Number("anchors.minScale");
  const double maxScale = output.Number("anchors.maxScale");
  const std::vector<double>& ratios = output.Numbers("anchors.aspectRatios");
  const double interpolatedRatio = output.Number("anchors.interpolatedScaleAspectRatio");
  const bool reduceLowest = output.Bool("anchors.reduceBoxesInLowestLayer");
  if (sizes.empty()) throw std::runtime_error("detector output.anchors.featureMapSizes must not be empty");
  if (!(minScale > 0 && minScale <= maxScale && maxScale <= 1)) {
    throw std::runtime_error("detector output.anchors: need 0 < minScale <= maxScale <= 1");
  }
  if (ratios.empty()) throw std::runtime_error("detector output.anchors.aspectRatios must not be empty");
  for (double r : ratios) {
    if (!(r > 0) || !std::isfinite(r)) throw std::runtime_error("detector output.anchors.aspectRatios must be > 0");
  }
  if (!(interpolatedRatio >= 0)) throw std::runtime_error("detector output.anchors.interpolatedScaleAspectRatio must be >= 0");

  const size_t n = sizes.size();
  // s_i = minScale + (maxScale - minScale) * i / (n - 1); one past the last layer is 1.
  auto scale = [&](size_t i) {
    if (i >= n) return 1.0;
    if (n == 1) return minScale;
    return minScale + (maxScale - minScale) * static_cast<double>(i) / static_cast<double>(n - 1);
  };
  std::vector<SsdAnchor> anchors;
  for (size_t layer = 0; layer < n; ++layer) {
    const double s = scale(layer);
    std::vector<std::pair<double, double>> boxes;  // (scale, aspect ratio) per cell, in order
    if (layer == 0 && reduceLowest) {
      boxes = {{0.1, 1.0}, {s, 2.0}, {s, 0.5}};
    } else {
      for (double r : ratios) boxes.emplace_back(s, r);
      if (interpolatedRatio > 0) boxes.emplace_back(std::sqrt(s * scale(layer + 1)), interpolatedRatio);
    }
    const int m = sizes[layer];
    for (int y = 0; y < m; ++y) {
      for (int x = 0; x < m; ++x) {
        for (const auto& [boxScale, ratio] : boxes) {
          const double root = std::sqrt(ratio);
          anchors.push_back({(y + 0.5) / m, (x + 0.5) / m, boxScale / root, boxScale * root});
        }
      }
    }
  }
  return anchors;
}

namespace {

class SsdDecoder final : public DetectorDecoder {
 public:
  explicit SsdDecoder(const DetectorSpec& spec)
      : anchors_(SsdAnchors(spec.output)),
        numClasses_(spec.output.Int("numClasses", 1, 100000)),
        catClass_(spec.output.Int("catClassIndex", 0, 100000)),
        canvasWidth_(spec.preprocess.width),
        canvasHeight_(spec.preprocess.height),
        scoreFloor_(spec.scoreFloor) {
    if (catClass_ >= numClasses_) throw std::runtime_error("detector output.catClassIndex must be below numClasses");
    if (spec.output.String("scoreActivation") != "sigmoid") {
      throw std::runtime_error("detector output.scoreActivation must be \"sigmoid\"");
    }
    const std::vector<double>& scales = spec.output.Numbers("boxCoderScales");
    if (scales.size() != 4) throw std::runtime_error("detector output.boxCoderScales must have 4 numbers (y, x, h, w)");
    for (size_t i = 0; i < 4; ++i) {
      if (!(scales[i] > 0)) throw std::runtime_error("detector output.boxCoderScales must be > 0");
      scales_[i] = scales[i];
    }
  }

  size_t OutputCount() const override { return 2; }

  void CheckShapes(const std::vector<std::vector<int64_t>>& shapes) const override {
    const int64_t a = static_cast<int64_t>(anchors_.size());
    auto fits = [](const std::vector<int64_t>& s, int64_t rows, int64_t cols) {
      return s.size() == 2 && (s[0] < 0 || s[0] == rows) && (s[1] < 0 || s[1] == cols);
    };
    if (!fits(shapes.at(0), a, 4) || !fits(shapes.at(1), a, numClasses_)) {
      throw std::runtime_error("detector outputs do not match the SSD spec (anchors, numClasses): expected [" +
                               std::to_string(a) + ", 4] box encodings and [" + std::to_string(a) + ", " +
                               std::to_string(numClasses_) + "] class logits per image");
    }
  }

  // y = ty / scale_y * ha + ya, x likewise; h = exp(th / scale_h) * ha, w likewise; normalised,
  // then canvas pixels (x * width, y * height: independent scales, as the input is stretched).
  std::vector<Detection> Decode(const std::vector<const float*>& outputs) const override {
    const float* boxes = outputs.at(0);
    const float* logits = outputs.at(1);
    std::vector<Detection> out;
    for (size_t i = 0; i < anchors_.size(); ++i) {
      const double logit = logits[i * numClasses_ + catClass_];
      const double score = 1.0 / (1.0 + std::exp(-logit));
      if (!(score >= scoreFloor_)) continue;  // also drops NaN
      const SsdAnchor& a = anchors_[i];
      const float* e = boxes + i * 4;
      const double yc = e[0] / scales_[0] * a.height + a.yCenter;
      const double xc = e[1] / scales_[1] * a.width + a.xCenter;
      const double h = std::exp(e[2] / scales_[2]) * a.height;
      const double w = std::exp(e[3] / scales_[3]) * a.width;
      if (!std::isfinite(yc) || !std::isfinite(xc) || !std::isfinite(h) || !std::isfinite(w)) continue;
      out.push_back({static_cast<float>((xc - w / 2) * canvasWidth_), static_cast<float>((yc - h / 2) * canvasHeight_),
                     static_cast<float>((xc + w / 2) * canvasWidth_), static_cast<float>((yc + h / 2) * canvasHeight_),
                     static_cast<float>(score)});
    }
    return out;
  }

 private:
  std::vector<SsdAnchor> anchors_;
  int numClasses_;
  int catClass_;
  int canvasWidth_;
  int canvasHeight_;
  double scoreFloor_;
  double scales_[4] = {1, 1, 1, 1};
};

}  // namespace

std::unique_ptr<DetectorDecoder> MakeSsdDecoder(const DetectorSpec& spec) { return std::make_unique<SsdDecoder>(spec); }

}  // namespace catcomfort
