// Checked readers of JS values, shared by the conversions (js_convert.cc for serving,
// js_convert_tools.cc for tools): each throws a Napi::TypeError naming the field when a value has
// the wrong JS type or range. JS thread only.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <napi.h>

namespace catcomfort {

[[noreturn]] void Bad(Napi::Env env, const std::string& what);
Napi::Object AsObject(const Napi::Value& value, const char* what);
double Number(const Napi::Object& obj, const char* key);  // finite
int Int(const Napi::Object& obj, const char* key, int min = std::numeric_limits<int>::min());
bool Bool(const Napi::Object& obj, const char* key);
std::string String(const Napi::Object& obj, const char* key);
Napi::Array Array(const Napi::Object& obj, const char* key);
std::array<double, 3> Triple(const Napi::Object& obj, const char* key);
// Bytes of a Buffer / Uint8Array without copying; false for anything else.
bool BytesOf(const Napi::Value& v, const uint8_t** data, size_t* length);
std::vector<uint8_t> CopyBuffer(const Napi::Object& obj, const char* key);

template <typename E>
struct Named {
  const char* name;
  E value;
};

// The enum value a JS string names; anything else is a TypeError listing the names.
template <typename E, size_t N>
E Choose(const Napi::Value& v, const char* what, const Named<E> (&names)[N]) {
  const std::string s = v.IsString() ? v.As<Napi::String>().Utf8Value() : "";
  for (const Named<E>& n : names) {
    if (s == n.name) return n.value;
  }
  std::string list;
  for (const Named<E>& n : names) list += std::string(list.empty() ? "'" : ", '") + n.name + "'";
  Bad(v.Env(), std::string(what) + " must be one of " + list);
}

}  // namespace catcomfort
