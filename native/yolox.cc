#include "yolox.h"

#include <algorithm>
#include <cmath>

namespace catcomfort {

int64_t YoloxRowCount(const std::vector<int>& strides, int canvasWidth, int canvasHeight) {
  int64_t rows = 0;
  for (int stride : strides) rows += static_cast<int64_t>(canvasHeight / stride) * (canvasWidth / stride);
  return rows;
}

std::vector<Detection> DecodeYoloxCats(const float* rows, int64_t rowCount, int64_t rowLength,
                                       const DetectorSpec& spec) {
  std::vector<Detection> out;
  const int canvasWidth = spec.preprocess.width;
  const int canvasHeight = spec.preprocess.height;
  const int64_t classColumn = 5 + spec.catClassIndex;
  int64_t row = 0;
  for (int stride : spec.strides) {
    const int gridW = canvasWidth / stride;
    const int gridH = canvasHeight / stride;
    for (int gy = 0; gy < gridH; ++gy) {
      for (int gx = 0; gx < gridW; ++gx, ++row) {
        if (row >= rowCount) return out;
        const float* r = rows + row * rowLength;
        const float score = r[4] * r[classColumn];
        if (!(score >= spec.scoreFloor)) continue;  // also drops NaN
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

namespace {

float Iou(const Detection& a, const Detection& b) {
  const float ix = std::max(0.0f, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
  const float iy = std::max(0.0f, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
  const float inter = ix * iy;
  const float areaA = std::max(0.0f, a.x2 - a.x1) * std::max(0.0f, a.y2 - a.y1);
  const float areaB = std::max(0.0f, b.x2 - b.x1) * std::max(0.0f, b.y2 - b.y1);
  const float uni = areaA + areaB - inter;
  return uni > 0 ? inter / uni : 0.0f;
}

}  // namespace

std::vector<Detection> NonMaxSuppression(std::vector<Detection> candidates, double iouThreshold) {
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Detection& a, const Detection& b) { return a.score > b.score; });
  std::vector<Detection> kept;
  for (const Detection& candidate : candidates) {
    bool suppressed = false;
    for (const Detection& k : kept) {
      if (Iou(candidate, k) > iouThreshold) {
        suppressed = true;
        break;
      }
    }
    if (!suppressed) kept.push_back(candidate);
  }
  return kept;
}

double Calibrate(const std::vector<std::pair<double, double>>& knots, double raw) {
  double value = raw;
  if (!knots.empty()) {
    if (raw <= knots.front().first) {
      value = knots.front().second;
    } else if (raw >= knots.back().first) {
      value = knots.back().second;
    } else {
      for (size_t i = 1; i < knots.size(); ++i) {
        const auto& [x1, y1] = knots[i];
        if (raw <= x1) {
          const auto& [x0, y0] = knots[i - 1];
          value = x1 > x0 ? y0 + (y1 - y0) * (raw - x0) / (x1 - x0) : y1;
          break;
        }
      }
    }
  }
  return std::clamp(value, 0.0, 1.0);
}

}  // namespace catcomfort
