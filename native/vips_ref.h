// RAII owner of one VipsImage reference (g_object_unref on destruction).
#pragma once

#include <utility>

#include <vips/vips.h>

namespace catcomfort {

class VipsRef {
 public:
  VipsRef() = default;
  explicit VipsRef(VipsImage* image) : image_(image) {}
  ~VipsRef() { Reset(); }
  VipsRef(const VipsRef&) = delete;
  VipsRef& operator=(const VipsRef&) = delete;
  VipsRef(VipsRef&& other) noexcept : image_(std::exchange(other.image_, nullptr)) {}
  VipsRef& operator=(VipsRef&& other) noexcept {
    if (this != &other) {
      Reset();
      image_ = std::exchange(other.image_, nullptr);
    }
    return *this;
  }

  VipsImage* get() const { return image_; }
  explicit operator bool() const { return image_ != nullptr; }
  // For vips_* output arguments: releases the current image first.
  VipsImage** out() {
    Reset();
    return &image_;
  }
  void Reset() {
    if (image_ != nullptr) g_object_unref(image_);
    image_ = nullptr;
  }

 private:
  VipsImage* image_ = nullptr;
};

}  // namespace catcomfort
