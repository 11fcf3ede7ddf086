#include "preprocess.h"

#include <algorithm>
#include <cmath>

namespace catcomfort {

namespace {

struct Taps {
  std::vector<int> first;   // first source index per output index
  std::vector<int> count;   // taps per output index
  std::vector<float> weights;  // maxTaps per output index
  int maxTaps = 0;
};

Taps ComputeTaps(double srcStart, double srcLength, int srcLimit, int outSize) {
  Taps taps;
  const double scale = srcLength / outSize;
  const double support = std::max(1.0, scale);  // triangle radius in source pixels
  taps.maxTaps = static_cast<int>(std::ceil(support)) * 2 + 1;
  taps.first.resize(outSize);
  taps.count.resize(outSize);
  taps.weights.assign(static_cast<size_t>(outSize) * taps.maxTaps, 0.0f);
  for (int i = 0; i < outSize; ++i) {
    const double center = srcStart + (i + 0.5) * scale;
    int lo = static_cast<int>(std::floor(center - support));
    int hi = static_cast<int>(std::ceil(center + support));
    lo = std::clamp(lo, 0, srcLimit - 1);
    hi = std::clamp(hi, lo + 1, srcLimit);
    hi = std::min(hi, lo + taps.maxTaps);
    double total = 0;
    float* w = &taps.weights[static_cast<size_t>(i) * taps.maxTaps];
    for (int j = lo; j < hi; ++j) {
      double d = std::fabs((j + 0.5 - center) / support);
      double v = d < 1.0 ? 1.0 - d : 0.0;
      w[j - lo] = static_cast<float>(v);
      total += v;
    }
    if (total <= 0) {  // centre outside every tap's support (tiny sources): nearest pixel
      int nearest = std::clamp(static_cast<int>(std::floor(center)), lo, hi - 1);
      std::fill(w, w + taps.maxTaps, 0.0f);
      w[nearest - lo] = 1.0f;
    } else {
      for (int j = 0; j < hi - lo; ++j) w[j] = static_cast<float>(w[j] / total);
    }
    taps.first[i] = lo;
    taps.count[i] = hi - lo;
  }
  return taps;
}

inline uint8_t ToByte(float v) {
  v = std::round(v);
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

}  // namespace

ResizedImage ResizeRgb(const RgbImage& src, double x, double y, double w, double h, int outWidth, int outHeight) {
  ResizedImage out;
  out.width = std::max(1, outWidth);
  out.height = std::max(1, outHeight);
  out.pixels.resize(static_cast<size_t>(out.width) * out.height * 3);

  const Taps horizontal = ComputeTaps(x, w, src.width, out.width);
  const Taps vertical = ComputeTaps(y, h, src.height, out.height);

  // Rows of the source that the vertical taps reach.
  int rowLo = src.height;
  int rowHi = 0;
  for (int i = 0; i < out.height; ++i) {
    rowLo = std::min(rowLo, vertical.first[i]);
    rowHi = std::max(rowHi, vertical.first[i] + vertical.count[i]);
  }

  // Horizontal pass: source rows -> float rows of out.width pixels.
  const size_t rowFloats = static_cast<size_t>(out.width) * 3;
  std::vector<float> temp(static_cast<size_t>(rowHi - rowLo) * rowFloats);
  const size_t srcStride = static_cast<size_t>(src.width) * 3;
  for (int r = rowLo; r < rowHi; ++r) {
    const uint8_t* row = src.pixels.get() + static_cast<size_t>(r) * srcStride;
    float* dst = &temp[static_cast<size_t>(r - rowLo) * rowFloats];
    for (int i = 0; i < out.width; ++i) {
      const float* wt = &horizontal.weights[static_cast<size_t>(i) * horizontal.maxTaps];
      const uint8_t* p = row + static_cast<size_t>(horizontal.first[i]) * 3;
      float r0 = 0, g0 = 0, b0 = 0;
      for (int k = 0; k < horizontal.count[i]; ++k, p += 3) {
        r0 += wt[k] * p[0];
        g0 += wt[k] * p[1];
        b0 += wt[k] * p[2];
      }
      dst[i * 3] = r0;
      dst[i * 3 + 1] = g0;
      dst[i * 3 + 2] = b0;
    }
  }

  // Vertical pass.
  std::vector<float> acc(rowFloats);
  for (int i = 0; i < out.height; ++i) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    const float* wt = &vertical.weights[static_cast<size_t>(i) * vertical.maxTaps];
    for (int k = 0; k < vertical.count[i]; ++k) {
      const float* row = &temp[static_cast<size_t>(vertical.first[i] + k - rowLo) * rowFloats];
      const float weight = wt[k];
      for (size_t j = 0; j < rowFloats; ++j) acc[j] += weight * row[j];
    }
    uint8_t* dst = out.pixels.data() + static_cast<size_t>(i) * rowFloats;
    for (size_t j = 0; j < rowFloats; ++j) dst[j] = ToByte(acc[j]);
  }
  return out;
}

Placement PlaceOnCanvas(int srcWidth, int srcHeight, const PreprocessSpec& spec, double factor, bool center,
                        bool flip) {
  Placement p;
  p.flip = flip;
  double sx = static_cast<double>(spec.width) / srcWidth;
  double sy = static_cast<double>(spec.height) / srcHeight;
  if (spec.resize == ResizeMode::Letterbox) sx = sy = std::min(sx, sy);
  p.width = std::clamp(static_cast<int>(std::lround(srcWidth * sx * factor)), 1, spec.width);
  p.height = std::clamp(static_cast<int>(std::lround(srcHeight * sy * factor)), 1, spec.height);
  p.scaleX = static_cast<double>(p.width) / srcWidth;
  p.scaleY = static_cast<double>(p.height) / srcHeight;
  if (center) {
    p.offsetX = (spec.width - p.width) / 2;
    p.offsetY = (spec.height - p.height) / 2;
  }
  return p;
}

void WriteTensor(const ResizedImage& content, const Placement& placement, const PreprocessSpec& spec, float* dst) {
  const int W = spec.width;
  const int H = spec.height;
  const size_t plane = static_cast<size_t>(W) * H;
  // Per output channel: which RGB channel feeds it, and a 256-entry normalisation table.
  int source[3];
  float lut[3][256];
  float pad[3];
  for (int c = 0; c < 3; ++c) {
    source[c] = spec.channelOrder == ChannelOrder::Rgb ? c : 2 - c;
    const double scale = spec.scale;
    const double mean = spec.mean[c];
    const double std = spec.std[c] == 0 ? 1 : spec.std[c];
    for (int v = 0; v < 256; ++v) lut[c][v] = static_cast<float>((v * scale - mean) / std);
    pad[c] = static_cast<float>((spec.padValue * scale - mean) / std);
  }

  const bool nchw = spec.layout == Layout::Nchw;
  if (nchw) {
    for (int c = 0; c < 3; ++c) std::fill(dst + c * plane, dst + (c + 1) * plane, pad[c]);
  } else {
    for (size_t i = 0; i < plane; ++i) {
      dst[i * 3] = pad[0];
      dst[i * 3 + 1] = pad[1];
      dst[i * 3 + 2] = pad[2];
    }
  }

  const int cw = std::min(content.width, W - placement.offsetX);
  const int ch = std::min(content.height, H - placement.offsetY);
  for (int y = 0; y < ch; ++y) {
    const uint8_t* row = content.pixels.data() + static_cast<size_t>(y) * content.width * 3;
    const size_t base = static_cast<size_t>(y + placement.offsetY) * W + placement.offsetX;
    for (int x = 0; x < cw; ++x) {
      const int sxIndex = placement.flip ? content.width - 1 - x : x;
      const uint8_t* px = row + static_cast<size_t>(sxIndex) * 3;
      if (nchw) {
        dst[base + x] = lut[0][px[source[0]]];
        dst[plane + base + x] = lut[1][px[source[1]]];
        dst[2 * plane + base + x] = lut[2][px[source[2]]];
      } else {
        float* o = dst + (base + x) * 3;
        o[0] = lut[0][px[source[0]]];
        o[1] = lut[1][px[source[1]]];
        o[2] = lut[2][px[source[2]]];
      }
    }
  }
}

}  // namespace catcomfort
