// JS <-> C++ struct conversion of what the service calls (the tools' own: js_convert_tools.h).
// JS thread only. Throws Napi::Error / Napi::TypeError on shapes that do not match
// src/native/addon.ts (turned into native_error at the boundary in addon.cc).
#pragma once

#include <vector>

#include <napi.h>

#include "items.h"
#include "pipeline.h"
#include "tools.h"
#include "specs.h"

namespace catcomfort {

NativeConfig ConfigFromJs(const Napi::Value& value);
PipelineSpec PipelineSpecFromJs(const Napi::Value& value);  // copies the model buffers
// Parts of a spec (also read by js_convert_tools.cc).
PreprocessSpec PreprocessFromJs(const Napi::Value& value);
OutputSpec OutputFromJs(const Napi::Value& value);

// One item; a Buffer is borrowed (ref receives a strong reference that the caller releases on
// the JS thread), a string is copied as UTF-8.
ItemInput ItemFromJs(const Napi::Value& value, napi_ref* ref);

// runSession() arguments: 'detector' | 'classifier', an integer batch >= 1, and optionally one
// image's input tensor (a Float32Array, copied; undefined: zeros).
SessionStage SessionStageFromJs(const Napi::Value& value);
int64_t BatchFromJs(const Napi::Value& value);
std::vector<float> RowFromJs(const Napi::Value& value);
// keepSessionBatches() argument: an array of batch sizes.
std::vector<int64_t> BatchesFromJs(const Napi::Value& value);

// preprocessImage() (the warm-up's input rows) arguments: the file bytes (copied) and a preprocess spec.
PreprocessRequest PreprocessRequestFromJs(const Napi::Value& image, const Napi::Value& spec);
Napi::Object PreprocessedToJs(Napi::Env env, const PreprocessedImage& image);
// {name, dims, data: Float32Array}
Napi::Object FloatTensorToJs(Napi::Env env, const FloatTensor& t);

Napi::Object InfoToJs(Napi::Env env, const NativeInfo& info);
// sessionBatches(): {detector: [{batch, runs, padRows}], classifier: [...]}.
Napi::Object SessionBatchesToJs(Napi::Env env, const SessionBatchCounts& counts);
Napi::Array ResultsToJs(Napi::Env env, const std::vector<ItemResult>& results);

}  // namespace catcomfort
