// SSD decoding (output.format "ssd", TF Object Detection API heads as MediaPipe runs them): two
// outputs per image, box encodings [A, 4] (ty, tx, th, tw) and class logits [A, numClasses];
// A anchors from the multiple-grid anchor generator; the cat score is sigmoid(cat logit); boxes
// by the faster-RCNN box coder. A port of src/graphs/ssd-anchors.ts (the reference, with the
// formulas); test/native.test.ts checks that both give the same anchors and boxes.
#pragma once

#include <vector>

#include "decoder.h"

namespace catcomfort {

// Normalised [0, 1] coordinates of the model input.
struct SsdAnchor {
  double yCenter = 0;
  double xCenter = 0;
  double height = 0;
  double width = 0;
};

// The anchors of output.anchors.* in output order (layer, row, column, box within the cell).
// Throws std::runtime_error on invalid settings.
std::vector<SsdAnchor> SsdAnchors(const OutputSpec& output);

}  // namespace catcomfort
