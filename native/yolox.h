// YOLOX head decoding (output.format "yolox"): one output [rows, 5 + numClasses] per image, rows
// of [x, y, w, h, objectness, class scores...] over the grids of output.strides, scores already
// sigmoid-ed; the cat score is objectness * class. See decoder.h for the interface.
#pragma once

#include <cstdint>
#include <vector>

#include "decoder.h"

namespace catcomfort {

// Number of rows the YOLOX head has for this canvas and these strides.
int64_t YoloxRowCount(const std::vector<int>& strides, int canvasWidth, int canvasHeight);

}  // namespace catcomfort
