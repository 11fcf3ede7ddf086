// The checked readers of native/js_read.h.
#include "js_read.h"

#include <cmath>

namespace catcomfort {

[[noreturn]] void Bad(Napi::Env env, const std::string& what) { throw Napi::TypeError::New(env, what); }

Napi::Object AsObject(const Napi::Value& value, const char* what) {
  if (!value.IsObject()) Bad(value.Env(), std::string(what) + " must be an object");
  return value.As<Napi::Object>();
}

double Number(const Napi::Object& obj, const char* key) {
  Napi::Value v = obj.Get(key);
  if (!v.IsNumber()) Bad(obj.Env(), std::string(key) + " must be a number");
  double d = v.As<Napi::Number>().DoubleValue();
  if (!std::isfinite(d)) Bad(obj.Env(), std::string(key) + " must be finite");
  return d;
}

int Int(const Napi::Object& obj, const char* key, int min) {
  double d = Number(obj, key);
  if (d != std::floor(d) || d < min || d > std::numeric_limits<int>::max()) {
    Bad(obj.Env(), std::string(key) + " must be an integer >= " + std::to_string(min));
  }
  return static_cast<int>(d);
}

bool Bool(const Napi::Object& obj, const char* key) {
  Napi::Value v = obj.Get(key);
  if (!v.IsBoolean()) Bad(obj.Env(), std::string(key) + " must be a boolean");
  return v.As<Napi::Boolean>().Value();
}

std::string String(const Napi::Object& obj, const char* key) {
  Napi::Value v = obj.Get(key);
  if (!v.IsString()) Bad(obj.Env(), std::string(key) + " must be a string");
  return v.As<Napi::String>().Utf8Value();
}

Napi::Array Array(const Napi::Object& obj, const char* key) {
  Napi::Value v = obj.Get(key);
  if (!v.IsArray()) Bad(obj.Env(), std::string(key) + " must be an array");
  return v.As<Napi::Array>();
}

std::array<double, 3> Triple(const Napi::Object& obj, const char* key) {
  Napi::Array a = Array(obj, key);
  if (a.Length() != 3) Bad(obj.Env(), std::string(key) + " must have 3 numbers");
  std::array<double, 3> out{};
  for (uint32_t i = 0; i < 3; ++i) {
    Napi::Value v = a.Get(i);
    if (!v.IsNumber()) Bad(obj.Env(), std::string(key) + " must have 3 numbers");
    out[i] = v.As<Napi::Number>().DoubleValue();
  }
  return out;
}

bool BytesOf(const Napi::Value& v, const uint8_t** data, size_t* length) {
  if (v.IsBuffer()) {
    auto b = v.As<Napi::Buffer<uint8_t>>();
    *data = b.Data();
    *length = b.Length();
    return true;
  }
  if (v.IsTypedArray() && v.As<Napi::TypedArray>().TypedArrayType() == napi_uint8_array) {
    auto a = v.As<Napi::Uint8Array>();
    *data = a.Data();
    *length = a.ByteLength();
    return true;
  }
  return false;
}

std::vector<uint8_t> CopyBuffer(const Napi::Object& obj, const char* key) {
  const uint8_t* data = nullptr;
  size_t length = 0;
  if (!BytesOf(obj.Get(key), &data, &length)) Bad(obj.Env(), std::string(key) + " must be a Buffer");
  return std::vector<uint8_t>(data, data + length);
}

}  // namespace catcomfort
