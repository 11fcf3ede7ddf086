// Entry points for tools and tests, not on the request path: runModel() (one Run of any ONNX
// model with float32 inputs and outputs, e.g. a converted model checked against reference
// values), preprocessImage() (the detector tensor of an image's plain view, exactly as the
// pipeline makes it) and decodeDetections() (the pipeline's decoder on given model outputs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "decoder.h"
#include "runtime.h"
#include "specs.h"

namespace catcomfort {

struct FloatTensor {
  std::string name;
  std::vector<int64_t> dims;
  std::vector<float> data;
};

struct RunModelRequest {
  std::vector<uint8_t> model;
  std::vector<FloatTensor> inputs;
};

// Opens a session on the model (the runtime's session options), feeds the named inputs, and
// returns every model output in the model's order. Throws when an output is not float32.
std::vector<FloatTensor> RunModel(RunModelRequest& request, const Runtime& runtime);

struct PreprocessRequest {
  std::vector<uint8_t> image;  // encoded file bytes
  PreprocessSpec spec;
};

struct PreprocessedImage {
  int width = 0;   // of the decoded image
  int height = 0;
  FloatTensor tensor;  // [1, 3, H, W] or [1, H, W, 3] per spec.layout
};

// Decodes the image and writes the tensor of the plain view (MakeViews + WriteViewTensor of
// native/geometry.h). Throws on an undecodable image.
PreprocessedImage PreprocessImage(const PreprocessRequest& request);

struct DecodeRequest {
  DetectorSpec spec;                 // preprocess, output and scoreFloor are used
  std::vector<FloatTensor> outputs;  // the model's outputs for one image (batch dimension 1)
};

// The decoder that the pipeline builds from this spec (MakeDecoder), run on the outputs: every
// cat candidate at or above scoreFloor in canvas pixels, in the decoder's order (no NMS).
// Throws on an unknown format, invalid settings, or outputs whose shapes do not fit.
std::vector<Detection> DecodeDetections(const DecodeRequest& request);

}  // namespace catcomfort
