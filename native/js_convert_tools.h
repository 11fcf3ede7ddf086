// JS <-> C++ conversions of the entry points only tools, tests and the bench call (runModel,
// decodeDetections, benchDecode); the service's are in js_convert.h. JS thread only; throws
// Napi::TypeError on shapes that do not match src/native/addon.ts.
#pragma once

#include <vector>

#include <napi.h>

#include "pipeline.h"
#include "tools.h"

namespace catcomfort {

// runModel() arguments: the model bytes (copied) and [{name, dims, data: Float32Array}] (copied).
RunModelRequest RunModelRequestFromJs(const Napi::Value& model, const Napi::Value& inputs);
Napi::Array FloatTensorsToJs(Napi::Env env, const std::vector<FloatTensor>& tensors);

// decodeDetections() arguments: {preprocess, output, scoreFloor} and the output tensors (copied).
DecodeRequest DecodeRequestFromJs(const Napi::Value& spec, const Napi::Value& outputs);
Napi::Array DetectionsToJs(Napi::Env env, const std::vector<Detection>& detections);

// benchDecode() (the bench binding only): per-item decode and preprocessing times.
Napi::Array DecodeTimingsToJs(Napi::Env env, const std::vector<DecodeTiming>& timings);

}  // namespace catcomfort
