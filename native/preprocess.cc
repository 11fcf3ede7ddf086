#include "preprocess.h"

#include <algorithm>
#include <cmath>

#if defined(__x86_64__) || defined(__SSE2__)
#include <immintrin.h>
#endif

namespace catcomfort {

namespace {

struct Taps {
  std::vector<int> first;   // first source index per output index
  std::vector<int> count;   // taps per output index (zero-weight taps at either end dropped)
  std::vector<float> weights;  // maxTaps per output index
  int maxTaps = 0;
};

// support: the triangle's radius in source pixels; 0 for the default, max(1, scale).
Taps ComputeTaps(double srcStart, double srcLength, int srcLimit, int outSize, double support = 0) {
  Taps taps;
  const double scale = srcLength / outSize;
  if (support <= 0) support = std::max(1.0, scale);
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
    // Zero-weight taps add nothing: drop them from both ends (at least one tap stays non-zero).
    int skip = 0;
    while (skip < hi - lo - 1 && w[skip] == 0.0f) ++skip;
    int count = hi - lo - skip;
    while (count > 1 && w[skip + count - 1] == 0.0f) --count;
    if (skip > 0) {
      std::copy(w + skip, w + skip + count, w);
      std::fill(w + count, w + taps.maxTaps, 0.0f);
    }
    taps.first[i] = lo + skip;
    taps.count[i] = count;
  }
  return taps;
}

// Rounds a non-negative-or-not filter sum to a byte: clamp, then +0.5 and truncate.
inline uint8_t ToByte(float v) {
  v = v < 0.0f ? 0.0f : (v > 255.0f ? 255.0f : v);
  return static_cast<uint8_t>(static_cast<int>(v + 0.5f));
}

// Vertical pass over contiguous bytes: out[j] = sum_k weights[k] * rows[k][j] for j < n.
void VerticalGeneric(const uint8_t* const* rows, const float* weights, int taps, size_t n, float* out) {
  constexpr size_t kBlock = 16;
  size_t j = 0;
  for (; j + kBlock <= n; j += kBlock) {
    float acc[kBlock] = {};
    for (int k = 0; k < taps; ++k) {
      const uint8_t* p = rows[k] + j;
      const float w = weights[k];
      for (size_t b = 0; b < kBlock; ++b) acc[b] += w * static_cast<float>(p[b]);
    }
    for (size_t b = 0; b < kBlock; ++b) out[j + b] = acc[b];
  }
  for (; j < n; ++j) {
    float acc = 0;
    for (int k = 0; k < taps; ++k) acc += weights[k] * static_cast<float>(rows[k][j]);
    out[j] = acc;
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CATCOMFORT_X86_DISPATCH 1
__attribute__((target("avx2,fma"))) void VerticalAvx2(const uint8_t* const* rows, const float* weights, int taps,
                                                      size_t n, float* out) {
  size_t j = 0;
  for (; j + 32 <= n; j += 32) {
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    for (int k = 0; k < taps; ++k) {
      const uint8_t* p = rows[k] + j;
      const __m256 w = _mm256_set1_ps(weights[k]);
      a0 = _mm256_fmadd_ps(w, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)))), a0);
      a1 = _mm256_fmadd_ps(w, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8)))), a1);
      a2 = _mm256_fmadd_ps(w, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 16)))), a2);
      a3 = _mm256_fmadd_ps(w, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 24)))), a3);
    }
    _mm256_storeu_ps(out + j, a0);
    _mm256_storeu_ps(out + j + 8, a1);
    _mm256_storeu_ps(out + j + 16, a2);
    _mm256_storeu_ps(out + j + 24, a3);
  }
  for (; j + 8 <= n; j += 8) {
    __m256 a0 = _mm256_setzero_ps();
    for (int k = 0; k < taps; ++k) {
      a0 = _mm256_fmadd_ps(_mm256_set1_ps(weights[k]),
                           _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(rows[k] + j)))),
                           a0);
    }
    _mm256_storeu_ps(out + j, a0);
  }
  for (; j < n; ++j) {
    float acc = 0;
    for (int k = 0; k < taps; ++k) acc += weights[k] * static_cast<float>(rows[k][j]);
    out[j] = acc;
  }
}

bool HasAvx2Fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}
#endif

void Vertical(const uint8_t* const* rows, const float* weights, int taps, size_t n, float* out) {
#ifdef CATCOMFORT_X86_DISPATCH
  if (HasAvx2Fma()) return VerticalAvx2(rows, weights, taps, n, out);
#endif
  VerticalGeneric(rows, weights, taps, n, out);
}

// Horizontal pass over one float row of interleaved RGB (row[0] is source column colLo; the row
// has at least one readable float past its last pixel) into one output row of bytes.
void Horizontal(const float* row, const Taps& taps, int colLo, int outWidth, uint8_t* dst) {
  for (int i = 0; i < outWidth; ++i) {
    const float* wt = &taps.weights[static_cast<size_t>(i) * taps.maxTaps];
    const float* p = row + static_cast<size_t>(taps.first[i] - colLo) * 3;
    const int count = taps.count[i];
#if defined(__SSE2__)
    __m128 acc = _mm_setzero_ps();
    for (int k = 0; k < count; ++k, p += 3) acc = _mm_add_ps(acc, _mm_mul_ps(_mm_set1_ps(wt[k]), _mm_loadu_ps(p)));
    acc = _mm_min_ps(_mm_max_ps(acc, _mm_setzero_ps()), _mm_set1_ps(255.0f));
    const __m128i v = _mm_cvttps_epi32(_mm_add_ps(acc, _mm_set1_ps(0.5f)));
    alignas(16) int32_t lanes[4];
    _mm_store_si128(reinterpret_cast<__m128i*>(lanes), v);
    dst[i * 3] = static_cast<uint8_t>(lanes[0]);
    dst[i * 3 + 1] = static_cast<uint8_t>(lanes[1]);
    dst[i * 3 + 2] = static_cast<uint8_t>(lanes[2]);
#else
    float r0 = 0, g0 = 0, b0 = 0;
    for (int k = 0; k < count; ++k, p += 3) {
      r0 += wt[k] * p[0];
      g0 += wt[k] * p[1];
      b0 += wt[k] * p[2];
    }
    dst[i * 3] = ToByte(r0);
    dst[i * 3 + 1] = ToByte(g0);
    dst[i * 3 + 2] = ToByte(b0);
#endif
  }
}

// Separable triangle resampling of an interleaved RGB buffer: a vertical pass (contiguous, SIMD)
// into one float row per output row, then a horizontal pass of that row.
ResizedImage ResizePixels(const uint8_t* pixels, int srcWidth, const Taps& horizontal, const Taps& vertical,
                          int outWidth, int outHeight) {
  ResizedImage out;
  out.width = outWidth;
  out.height = outHeight;
  out.pixels.resize(static_cast<size_t>(out.width) * out.height * 3);

  // Columns of the source that the horizontal taps reach.
  int colLo = srcWidth;
  int colHi = 0;
  for (int i = 0; i < out.width; ++i) {
    colLo = std::min(colLo, horizontal.first[i]);
    colHi = std::max(colHi, horizontal.first[i] + horizontal.count[i]);
  }
  const size_t n = static_cast<size_t>(colHi - colLo) * 3;
  std::vector<float> row(n + 4, 0.0f);  // + slack: the horizontal pass reads 4 floats per pixel
  std::vector<const uint8_t*> rows(vertical.maxTaps);
  const size_t srcStride = static_cast<size_t>(srcWidth) * 3;
  const uint8_t* base = pixels + static_cast<size_t>(colLo) * 3;
  for (int i = 0; i < out.height; ++i) {
    const int count = vertical.count[i];
    for (int k = 0; k < count; ++k) rows[k] = base + static_cast<size_t>(vertical.first[i] + k) * srcStride;
    Vertical(rows.data(), &vertical.weights[static_cast<size_t>(i) * vertical.maxTaps], count, n, row.data());
    Horizontal(row.data(), horizontal, colLo, out.width, out.pixels.data() + static_cast<size_t>(i) * out.width * 3);
  }
  return out;
}

}  // namespace

ResizedImage ResizeRgb(const RgbImage& src, double x, double y, double w, double h, int outWidth, int outHeight) {
  outWidth = std::max(1, outWidth);
  outHeight = std::max(1, outHeight);
  return ResizePixels(src.pixels.data(), src.width, ComputeTaps(x, w, src.width, outWidth),
                      ComputeTaps(y, h, src.height, outHeight), outWidth, outHeight);
}

ResizedImage ReduceRgb(const ResizedImage& src, int outWidth, int outHeight) {
  outWidth = std::max(1, outWidth);
  outHeight = std::max(1, outHeight);
  // A triangle of radius R has variance R^2 / 6, and variances add under convolution: the direct
  // resize's radius is r = src / out of these pixels, src's own filter had radius 1 of them.
  auto support = [](int from, int to) {
    const double r = static_cast<double>(from) / to;
    return std::max(1e-3, std::sqrt(std::max(0.0, r * r - 1.0)));
  };
  return ResizePixels(src.pixels.data(), src.width,
                      ComputeTaps(0, src.width, src.width, outWidth, support(src.width, outWidth)),
                      ComputeTaps(0, src.height, src.height, outHeight, support(src.height, outHeight)), outWidth,
                      outHeight);
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
