// YOLOX head decoding for the cat class, NMS and score calibration.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "specs.h"

namespace catcomfort {

struct Detection {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // canvas pixels
  float score = 0;                       // objectness * class
};

// Number of rows the YOLOX head has for this canvas and these strides.
int64_t YoloxRowCount(const std::vector<int>& strides, int canvasWidth, int canvasHeight);

// rows: [rowCount, 5 + numClasses] of one image. Returns cat candidates with score >= scoreFloor.
// x, y = (raw + grid index) * stride; w, h = exp(raw) * stride (scores already sigmoid-ed).
std::vector<Detection> DecodeYoloxCats(const float* rows, int64_t rowCount, int64_t rowLength, const DetectorSpec& spec);

// Greedy non-maximum suppression, highest score first.
std::vector<Detection> NonMaxSuppression(std::vector<Detection> candidates, double iouThreshold);

// Piecewise-linear over the [raw, calibrated] knots (sorted by raw), flat outside them,
// clamped to [0, 1]; identity (clamped) when there are no knots.
double Calibrate(const std::vector<std::pair<double, double>>& knots, double raw);

}  // namespace catcomfort
