#include "decode.h"

#include <cstring>
#include <string>

#include "items.h"
#include "vips_ref.h"

namespace catcomfort {

namespace {

[[noreturn]] void Undecodable() {
  vips_error_clear();
  throw ItemError{ItemErrorCode::Undecodable};
}

// Loaders accepted from clients; anything else (SVG, PDF, HEIF, raw formats...) is refused
// before it is parsed any further.
bool AllowedLoader(const char* nickname) {
  static const char* const kAllowed[] = {"jpegload_buffer", "pngload_buffer", "webpload_buffer", "gifload_buffer",
                                         "tiffload_buffer"};
  for (const char* allowed : kAllowed) {
    if (std::strcmp(nickname, allowed) == 0) return true;
  }
  return false;
}

bool SwapsAxes(int orientation) { return orientation >= 5 && orientation <= 8; }

}  // namespace

int LargestShrink(double width, double height, int needWidth, int needHeight) {
  for (int shrink : {8, 4, 2}) {
    if (width / shrink >= needWidth && height / shrink >= needHeight) return shrink;
  }
  return 1;
}

RgbImage DecodeImage(const uint8_t* data, size_t length, uint64_t maxPixels, const ShrinkChooser& chooseShrink) {
  if (length == 0) throw ItemError{ItemErrorCode::EmptyImage};

  const char* loader = vips_foreign_find_load_buffer(data, length);
  if (loader == nullptr) Undecodable();
  const char* nickname = vips_nickname_find(g_type_from_name(loader));
  if (nickname == nullptr || !AllowedLoader(nickname)) Undecodable();

  // Header only: pixels are decoded lazily when the pipeline below is written to memory.
  // fail_on=error makes truncated or corrupt data an error instead of a grey tail.
  // Multi-frame GIF/WebP/TIFF: the loaders' default n=1 gives the first frame/page only.
  VipsRef image(vips_image_new_from_buffer(data, length, "", "access", VIPS_ACCESS_SEQUENTIAL, "fail_on",
                                           VIPS_FAIL_ON_ERROR, nullptr));
  if (!image) Undecodable();

  const uint64_t width = static_cast<uint64_t>(vips_image_get_width(image.get()));
  const uint64_t height = static_cast<uint64_t>(vips_image_get_height(image.get()));
  if (width == 0 || height == 0) Undecodable();
  if (width * height > maxPixels) {
    throw ItemError{ItemErrorCode::TooManyPixels};
  }
  if (vips_image_get_format(image.get()) != VIPS_FORMAT_UCHAR) {
    throw ItemError{ItemErrorCode::UnsupportedFormat};
  }

  const int orientation = vips_image_get_orientation(image.get());
  const int sourceWidth = static_cast<int>(SwapsAxes(orientation) ? height : width);
  const int sourceHeight = static_cast<int>(SwapsAxes(orientation) ? width : height);
  int shrink = 1;
  if (chooseShrink && std::strcmp(nickname, "jpegload_buffer") == 0) {
    shrink = chooseShrink(sourceWidth, sourceHeight);
    if (shrink != 1 && shrink != 2 && shrink != 4 && shrink != 8) shrink = 1;
  }
  if (shrink > 1) {
    // libvips only reads the buffer; its API takes it non-const.
    if (vips_jpegload_buffer(const_cast<uint8_t*>(data), length, image.out(), "shrink", shrink, "access",
                             VIPS_ACCESS_SEQUENTIAL, "fail_on", VIPS_FAIL_ON_ERROR, nullptr) != 0) {
      Undecodable();
    }
  }

  VipsRef current = std::move(image);
  VipsRef next;

  // Colour: grey, CMYK (embedded profile, else libvips' built-in one), Lab... -> sRGB.
  VipsInterpretation interpretation = vips_image_get_interpretation(current.get());
  if (interpretation != VIPS_INTERPRETATION_sRGB && interpretation != VIPS_INTERPRETATION_RGB) {
    if (vips_colourspace(current.get(), next.out(), VIPS_INTERPRETATION_sRGB, nullptr) == 0) {
      current = std::move(next);
    } else {
      // Unknown interpretation (e.g. multiband): the band handling below takes it as RGB/grey.
      vips_error_clear();
      next.Reset();
    }
  }

  // Alpha: transparent pixels are flattened onto white (what a viewer shows on a white page;
  // black would make transparent backgrounds look like dark blobs to the detector).
  if (vips_image_hasalpha(current.get())) {
    VipsArrayDouble* white = vips_array_double_newv(1, 255.0);
    int failed = vips_flatten(current.get(), next.out(), "background", white, nullptr);
    vips_area_unref(VIPS_AREA(white));
    if (failed != 0) Undecodable();
    current = std::move(next);
  }

  // Exactly three uchar bands.
  int bands = vips_image_get_bands(current.get());
  if (bands == 1) {
    VipsImage* copies[3] = {current.get(), current.get(), current.get()};
    if (vips_bandjoin(copies, next.out(), 3, nullptr) != 0) Undecodable();
    current = std::move(next);
  } else if (bands > 3) {
    if (vips_extract_band(current.get(), next.out(), 0, "n", 3, nullptr) != 0) Undecodable();
    current = std::move(next);
  } else if (bands == 2) {  // grey + an extra band that is not flagged as alpha
    VipsRef grey;
    if (vips_extract_band(current.get(), grey.out(), 0, nullptr) != 0) Undecodable();
    VipsImage* copies[3] = {grey.get(), grey.get(), grey.get()};
    if (vips_bandjoin(copies, next.out(), 3, nullptr) != 0) Undecodable();
    current = std::move(next);
  }
  if (vips_image_get_format(current.get()) != VIPS_FORMAT_UCHAR) {
    if (vips_cast_uchar(current.get(), next.out(), nullptr) != 0) Undecodable();
    current = std::move(next);
  }

  // EXIF orientation: rotating needs random access, so decode to memory first; the loader
  // stays sequential and the decoded copy is only made when the image is actually rotated.
  if (orientation > 1 && orientation <= 8) {
    VipsImage* memory = vips_image_copy_memory(current.get());
    if (memory == nullptr) Undecodable();
    current = VipsRef(memory);
    if (vips_autorot(current.get(), next.out(), nullptr) != 0) Undecodable();
    current = std::move(next);
  }

  RgbImage out;
  out.width = vips_image_get_width(current.get());
  out.height = vips_image_get_height(current.get());
  out.sourceWidth = sourceWidth;
  out.sourceHeight = sourceHeight;
  out.shrink = shrink;
  if (vips_image_get_bands(current.get()) != 3 || out.width <= 0 || out.height <= 0) Undecodable();
  // Written straight into a pooled block (native/image_blocks.h) that libvips treats as its output.
  out.pixels.resize(static_cast<size_t>(out.width) * out.height * 3);
  VipsRef target(vips_image_new_from_memory(out.pixels.data(), out.pixels.size(), out.width, out.height, 3,
                                            VIPS_FORMAT_UCHAR));
  if (!target || vips_image_write(current.get(), target.get()) != 0) Undecodable();
  return out;
}

}  // namespace catcomfort
