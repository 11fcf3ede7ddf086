// Per-item input and result structs of analyze(): plain C++, no N-API.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace catcomfort {

enum class ItemEncoding { Base64Strict, Base64Lenient, Bytes };

// The item's data: either an owned copy (JS strings) or a borrowed view of a Buffer that the
// JS side keeps alive (a Napi::Reference held, and released, on the JS thread only).
struct ItemInput {
  ItemEncoding encoding = ItemEncoding::Bytes;
  bool fromString = false;  // true: `owned` holds the UTF-8 of a JS string
  std::string owned;
  const uint8_t* data = nullptr;
  size_t length = 0;

  const uint8_t* bytes() const { return fromString ? reinterpret_cast<const uint8_t*>(owned.data()) : data; }
  size_t size() const { return fromString ? owned.size() : length; }
};

enum class ItemErrorCode { InvalidBase64, EmptyImage, Undecodable, UnsupportedFormat, TooManyPixels, Internal };

const char* ItemErrorCodeName(ItemErrorCode code);

// A per-item failure, thrown inside the item's stage and turned into an ItemResult.
struct ItemError {
  ItemErrorCode code;
  std::string message;
};

struct CatCandidate {
  std::array<int, 4> box{0, 0, 0, 0};
  double confidence = 0;
  double rawScore = 0;
};

struct ItemResult {
  bool ok = false;
  ItemErrorCode code = ItemErrorCode::Internal;
  std::string message;
  int width = 0;
  int height = 0;
  std::optional<CatCandidate> cat;
  std::optional<double> score;
  std::vector<float> output;  // the classifier's whole output row, only with ClassifierSpec.returnOutput
  double decodeMs = 0;
  double detectMs = 0;
  double classifyMs = 0;
};

}  // namespace catcomfort
