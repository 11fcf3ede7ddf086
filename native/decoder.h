// Detector output decoding behind one interface. The manifest's `detector.output.format` picks a
// decoder from the table in decoder.cc; each format lives in its own file (yolox.cc, ssd.cc) and
// reads its own settings from OutputSpec. A new format is one new file and one table entry.
//
// The pipeline is the same for every format: it runs the detector on each view, gives the
// decoder that image's outputs, applies NonMaxSuppression to the candidates, keeps the top one,
// and maps it back to source pixels through the view's Placement (letterbox or stretch, offset,
// flip). Decoders therefore return cat candidates in canvas pixels (the model input's), unsorted.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "specs.h"

namespace catcomfort {

struct Detection {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;  // canvas pixels
  float score = 0;                       // the format's cat probability, before calibration
};

class DetectorDecoder {
 public:
  virtual ~DetectorDecoder() = default;

  // How many model outputs the decoder reads: the model's first N outputs, in its order.
  virtual size_t OutputCount() const = 0;

  // Checks the per-image shapes of those outputs (batch dimension removed); a dimension < 0 is
  // unknown (symbolic, as the session reports it before a Run) and passes. Throws
  // std::runtime_error naming what does not match the spec.
  virtual void CheckShapes(const std::vector<std::vector<int64_t>>& shapes) const = 0;

  // Cat candidates of one image whose score is >= the spec's scoreFloor, in canvas pixels.
  // outputs[k] points at this image's part of output k (shapes as checked above).
  virtual std::vector<Detection> Decode(const std::vector<const float*>& outputs) const = 0;
};

// Builds the decoder that the spec's output.format names, validating its settings once (and,
// for SSD, generating the anchors once). Throws std::runtime_error for an unknown format or
// invalid settings.
std::unique_ptr<DetectorDecoder> MakeDecoder(const DetectorSpec& spec);

// The formats in the table, for messages and tests.
std::vector<std::string> DecoderFormats();

// Factories of the formats (one per file), referenced by the table in decoder.cc.
std::unique_ptr<DetectorDecoder> MakeYoloxDecoder(const DetectorSpec& spec);
std::unique_ptr<DetectorDecoder> MakeSsdDecoder(const DetectorSpec& spec);

// Greedy non-maximum suppression, highest score first (stable for equal scores).
std::vector<Detection> NonMaxSuppression(std::vector<Detection> candidates, double iouThreshold);

// Piecewise-linear over the [raw, calibrated] knots (sorted by raw), flat outside them,
// clamped to [0, 1]; identity (clamped) when there are no knots.
double Calibrate(const std::vector<std::pair<double, double>>& knots, double raw);

}  // namespace catcomfort
