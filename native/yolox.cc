#include "yolox.h"

#include <cmath>
#include <stdexcept>

namespace catcomfort {

int64_t YoloxRowCount(const std::vector<int>& strides, int canvasWidth, int canvasHeight) {
  int64_t rows = 0;
  for (int stride : strides) rows += static_cast<int64_t>(canvasHeight / stride) * (canvasWidth / stride);
  return rows;
}

namespace {

class YoloxDecoder final : public DetectorDecoder {
 public:
  explicit YoloxDecoder(const DetectorSpec& spec)
      : strides_(spec.output.Ints("strides", 1, 4096)),
        numClasses_(spec.output.Int("numClasses", 1, 100000)),
        catClass_(spec.output.Int("catClassIndex", 0, 100000)),
        canvasWidth_(spec.preprocess.width),
        canvasHeight_(spec.preprocess.height),
        scoreFloor_(spec.scoreFloor) {
    if (strides_.empty()) throw std::runtime_error("detector output.strides must not be empty");
    if (catClass_ >= numClasses_) throw std::runtime_error("detector output.catClassIndex must be below numClasses");
    rows_ = YoloxRowCount(strides_, canvasWidth_, canvasHeight_);
    rowLength_ = 5 + numClasses_;
  }

  size_t OutputCount() const override { return 1; }

  void CheckShapes(const std::vector<std::vector<int64_t>>& shapes) const override {
    const std::vector<int64_t>& s = shapes.at(0);
    if (s.size() != 2 || (s[0] >= 0 && s[0] != rows_) || (s[1] >= 0 && s[1] != rowLength_)) {
      throw std::runtime_error("detector output shape does not match the YOLOX spec (strides, numClasses): expected [" +
                               std::to_string(rows_) + ", " + std::to_string(rowLength_) + "] per image");
    }
  }

  // x, y = (raw + grid index) * stride; w, h = exp(raw) * stride.
  std::vector<Detection> Decode(const std::vector<const float*>& outputs) const override {
    std::vector<Detection> out;
    const float* rows = outputs.at(0);
    const int64_t classColumn = 5 + catClass_;
    int64_t row = 0;
    for (int stride : strides_) {
      const int gridW = canvasWidth_ / stride;
      const int gridH = canvasHeight_ / stride;
      for (int gy = 0; gy < gridH; ++gy) {
        for (int gx = 0; gx < gridW; ++gx, ++row) {
          const float* r = rows + row * rowLength_;
          const float score = r[4] * r[classColumn];
          if (!(score >= scoreFloor_)) continue;  // also drops NaN
          const float cx = (r[0] + gx) * stride;
          const float cy = (r[1] + gy) * stride;
          const float w = std::exp(r[2]) * stride;
          const float h = std::exp(r[3]) * stride;
          if (!std::isfinite(cx) || !std::isfinite(cy) || !std::isfinite(w) || !std::isfinite(h)) continue;
          out.push_back({cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2, score});
        }
      }
    }
    return out;
  }

 private:
  std::vector<int> strides_;
  int numClasses_;
  int catClass_;
  int canvasWidth_;
  int canvasHeight_;
  double scoreFloor_;
  int64_t rows_ = 0;
  int64_t rowLength_ = 0;
};

}  // namespace

std::unique_ptr<DetectorDecoder> MakeYoloxDecoder(const DetectorSpec& spec) { return std::make_unique<YoloxDecoder>(spec); }

}  // namespace catcomfort
