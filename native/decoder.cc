#include "decoder.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace catcomfort {

namespace {

using DecoderFactory = std::unique_ptr<DetectorDecoder> (*)(const DetectorSpec&);

// The dispatch table: output.format -> decoder. One entry per format.
const std::pair<const char*, DecoderFactory> kDecoders[] = {
    {"yolox", MakeYoloxDecoder},
    {"ssd", MakeSsdDecoder},
};

[[noreturn]] void BadKey(const std::string& key, const std::string& what) {
  throw std::runtime_error("detector output." + key + " " + what);
}

float Iou(const Detection& a, const Detection& b) {
  const float ix = std::max(0.0f, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
  const float iy = std::max(0.0f, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
  const float inter = ix * iy;
  const float areaA = std::max(0.0f, a.x2 - a.x1) * std::max(0.0f, a.y2 - a.y1);
  const float areaB = std::max(0.0f, b.x2 - b.x1) * std::max(0.0f, b.y2 - b.y1);
  const float uni = areaA + areaB - inter;
  return uni > 0 ? inter / uni : 0.0f;
}

}  // namespace

const std::vector<double>& OutputSpec::Numbers(const std::string& key) const {
  auto it = numbers.find(key);
  if (it == numbers.end()) BadKey(key, "is missing");
  return it->second;
}

double OutputSpec::Number(const std::string& key) const {
  const std::vector<double>& v = Numbers(key);
  if (v.size() != 1) BadKey(key, "must be one number");
  return v[0];
}

int OutputSpec::Int(const std::string& key, int min, int max) const {
  const double d = Number(key);
  if (d != std::floor(d) || d < min || d > max) {
    BadKey(key, "must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return static_cast<int>(d);
}

std::vector<int> OutputSpec::Ints(const std::string& key, int min, int max) const {
  std::vector<int> out;
  for (double d : Numbers(key)) {
    if (d != std::floor(d) || d < min || d > max) {
      BadKey(key, "must hold integers in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
    }
    out.push_back(static_cast<int>(d));
  }
  return out;
}

bool OutputSpec::Bool(const std::string& key) const {
  const double d = Number(key);
  if (d != 0 && d != 1) BadKey(key, "must be a boolean");
  return d == 1;
}

const std::string& OutputSpec::String(const std::string& key) const {
  auto it = strings.find(key);
  if (it == strings.end()) BadKey(key, "is missing or not a string");
  return it->second;
}

std::unique_ptr<DetectorDecoder> MakeDecoder(const DetectorSpec& spec) {
  for (const auto& [format, factory] : kDecoders) {
    if (spec.output.format == format) return factory(spec);
  }
  std::string known;
  for (const std::string& f : DecoderFormats()) known += (known.empty() ? "" : ", ") + f;
  throw std::runtime_error("detector output format \"" + spec.output.format + "\" has no decoder (known: " + known + ")");
}

std::vector<std::string> DecoderFormats() {
  std::vector<std::string> out;
  for (const auto& entry : kDecoders) out.emplace_back(entry.first);
  return out;
}

std::vector<Detection> NonMaxSuppression(std::vector<Detection> candidates, double iouThreshold) {
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Detection& a, const Detection& b) { return a.score > b.score; });
  std::vector<Detection> kept;
  for (const Detection& candidate : candidates) {
    bool suppressed = false;
    for (const Detection& k : kept) {
      if (Iou(candidate, k) > iouThreshold) {
        suppressed = true;
        break;
      }
    }
    if (!suppressed) kept.push_back(candidate);
  }
  return kept;
}

double Calibrate(const std::vector<std::pair<double, double>>& knots, double raw) {
  double value = raw;
  if (!knots.empty()) {
    if (raw <= knots.front().first) {
      value = knots.front().second;
    } else if (raw >= knots.back().first) {
      value = knots.back().second;
    } else {
      for (size_t i = 1; i < knots.size(); ++i) {
        const auto& [x1, y1] = knots[i];
        if (raw <= x1) {
          const auto& [x0, y0] = knots[i - 1];
          value = x1 > x0 ? y0 + (y1 - y0) * (raw - x0) / (x1 - x0) : y1;
          break;
        }
      }
    }
  }
  return std::clamp(value, 0.0, 1.0);
}

}  // namespace catcomfort
