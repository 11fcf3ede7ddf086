// The conversions of the entry points only tools, tests and the bench call: runModel() and
// decodeDetections() (native/tools.h) and benchDecode()'s timings. The service's own conversions,
// preprocessImage()'s included (the warm-up uses it), are in js_convert.cc.
#include "js_convert_tools.h"

#include <cmath>
#include <string>

#include "js_convert.h"
#include "js_read.h"

namespace catcomfort {

namespace {

FloatTensor FloatTensorFromJs(Napi::Env env, const Napi::Value& value, const char* what) {
  Napi::Object o = AsObject(value, what);
  FloatTensor t;
  t.name = String(o, "name");
  Napi::Array dims = Array(o, "dims");
  size_t count = 1;
  for (uint32_t d = 0; d < dims.Length(); ++d) {
    Napi::Value v = dims.Get(d);
    double x = v.IsNumber() ? v.As<Napi::Number>().DoubleValue() : -1;
    if (x != std::floor(x) || x < 0 || x > 1e9) Bad(env, "dims must be non-negative integers");
    t.dims.push_back(static_cast<int64_t>(x));
    count *= static_cast<size_t>(x);
  }
  Napi::Value values = o.Get("data");
  if (!values.IsTypedArray() || values.As<Napi::TypedArray>().TypedArrayType() != napi_float32_array) {
    Bad(env, "data must be a Float32Array");
  }
  Napi::Float32Array f = values.As<Napi::Float32Array>();
  if (f.ElementLength() != count) Bad(env, std::string("data length does not match dims of ") + what + " " + t.name);
  t.data.assign(f.Data(), f.Data() + f.ElementLength());
  return t;
}

std::vector<FloatTensor> FloatTensorsFromJs(Napi::Env env, const Napi::Value& value, const char* what) {
  if (!value.IsArray()) Bad(env, std::string(what) + "s must be an array");
  Napi::Array array = value.As<Napi::Array>();
  std::vector<FloatTensor> out;
  for (uint32_t i = 0; i < array.Length(); ++i) out.push_back(FloatTensorFromJs(env, array.Get(i), what));
  return out;
}

}  // namespace

RunModelRequest RunModelRequestFromJs(const Napi::Value& model, const Napi::Value& inputs) {
  Napi::Env env = model.Env();
  RunModelRequest request;
  const uint8_t* data = nullptr;
  size_t length = 0;
  if (!BytesOf(model, &data, &length)) Bad(env, "model must be a Buffer");
  request.model.assign(data, data + length);
  request.inputs = FloatTensorsFromJs(env, inputs, "input");
  return request;
}

DecodeRequest DecodeRequestFromJs(const Napi::Value& spec, const Napi::Value& outputs) {
  Napi::Object o = AsObject(spec, "detector");
  DecodeRequest request;
  request.spec.preprocess = PreprocessFromJs(o.Get("preprocess"));
  request.spec.output = OutputFromJs(o.Get("output"));
  request.spec.scoreFloor = Number(o, "scoreFloor");
  request.outputs = FloatTensorsFromJs(spec.Env(), outputs, "output");
  return request;
}

Napi::Array DetectionsToJs(Napi::Env env, const std::vector<Detection>& detections) {
  Napi::Array out = Napi::Array::New(env, detections.size());
  for (size_t i = 0; i < detections.size(); ++i) {
    const Detection& d = detections[i];
    Napi::Object o = Napi::Object::New(env);
    Napi::Array box = Napi::Array::New(env, 4);
    box.Set(0u, Napi::Number::New(env, d.x1));
    box.Set(1u, Napi::Number::New(env, d.y1));
    box.Set(2u, Napi::Number::New(env, d.x2));
    box.Set(3u, Napi::Number::New(env, d.y2));
    o.Set("box", box);
    o.Set("score", Napi::Number::New(env, d.score));
    out.Set(static_cast<uint32_t>(i), o);
  }
  return out;
}

Napi::Array FloatTensorsToJs(Napi::Env env, const std::vector<FloatTensor>& tensors) {
  Napi::Array out = Napi::Array::New(env, tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) out.Set(static_cast<uint32_t>(i), FloatTensorToJs(env, tensors[i]));
  return out;
}

Napi::Array DecodeTimingsToJs(Napi::Env env, const std::vector<DecodeTiming>& timings) {
  Napi::Array out = Napi::Array::New(env, timings.size());
  for (size_t i = 0; i < timings.size(); ++i) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("ok", timings[i].ok);
    o.Set("decodeMs", timings[i].decodeMs);
    o.Set("preprocessMs", timings[i].preprocessMs);
    out.Set(static_cast<uint32_t>(i), o);
  }
  return out;
}

}  // namespace catcomfort
