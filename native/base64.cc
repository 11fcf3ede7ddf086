#include "base64.h"

#include <array>
#include <cstring>
#include <string>
#include <utility>

#include "items.h"

namespace catcomfort {

namespace {

constexpr uint8_t kInvalid = 0xFF;

constexpr std::array<uint8_t, 256> MakeTable() {
  std::array<uint8_t, 256> table{};
  for (auto& v : table) v = kInvalid;
  const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (uint8_t i = 0; i < 64; ++i) table[static_cast<uint8_t>(alphabet[i])] = i;
  return table;
}

constexpr std::array<uint8_t, 256> kTable = MakeTable();

[[noreturn]] void InvalidBase64() { throw ItemError{ItemErrorCode::InvalidBase64, "Image is not valid base64."}; }
// Lenient (v1) failures carry CPython's binascii / str.encode wording (3.11).
[[noreturn]] void LenientError(std::string message) {
  throw ItemError{ItemErrorCode::InvalidBase64, std::move(message)};
}
[[noreturn]] void EmptyImage() { throw ItemError{ItemErrorCode::EmptyImage, "Image is empty."}; }

bool IsTypeChar(uint8_t c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '+' || c == '-';
}

// Length of a `data:image/<type>;base64,` prefix at the start of text, or 0.
size_t DataUrlPrefix(const uint8_t* text, size_t length) {
  static const char kHead[] = "data:image/";
  static const char kTail[] = ";base64,";
  const size_t head = sizeof(kHead) - 1;
  const size_t tail = sizeof(kTail) - 1;
  if (length < head || std::memcmp(text, kHead, head) != 0) return 0;
  size_t i = head;
  while (i < length && IsTypeChar(text[i])) ++i;
  if (i == head) return 0;
  if (length - i < tail || std::memcmp(text + i, kTail, tail) != 0) return 0;
  return i + tail;
}

}  // namespace

std::vector<uint8_t> DecodeBase64Strict(const uint8_t* text, size_t length) {
  size_t prefix = DataUrlPrefix(text, length);
  text += prefix;
  length -= prefix;
  if (length == 0) EmptyImage();
  if (length % 4 != 0) InvalidBase64();
  size_t pads = 0;
  if (text[length - 1] == '=') pads = text[length - 2] == '=' ? 2 : 1;
  const size_t dataChars = length - pads;
  std::vector<uint8_t> out(dataChars / 4 * 3 + (pads == 0 ? 0 : 3 - pads));
  uint8_t* dst = out.data();
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < dataChars; ++i) {
    uint8_t v = kTable[text[i]];
    if (v == kInvalid) InvalidBase64();  // includes '=' before the final padding
    acc = (acc << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      *dst++ = static_cast<uint8_t>(acc >> bits);
      acc &= (1u << bits) - 1;
    }
  }
  if (out.empty()) EmptyImage();
  return out;
}

std::vector<uint8_t> DecodeBase64Lenient(const uint8_t* text, size_t length, bool fromString) {
  if (fromString) {
    for (size_t i = 0; i < length; ++i) {
      // Python: ValueError from a2b_base64's str argument conversion.
      if (text[i] >= 0x80) LenientError("string argument should contain only ASCII characters");
    }
  }
  // Upper bound: every character a data character.
  std::vector<uint8_t> out(length / 4 * 3 + 3);
  uint8_t* dst = out.data();
  int quadPos = 0;
  int pads = 0;
  uint8_t left = 0;
  bool complete = false;
  for (size_t i = 0; i < length && !complete; ++i) {
    uint8_t c = text[i];
    if (c == '=') {
      if (quadPos >= 2 && quadPos + ++pads >= 4) complete = true;  // same short-circuit as CPython
      continue;
    }
    uint8_t v = kTable[c];
    if (v == kInvalid) continue;
    pads = 0;
    switch (quadPos) {
      case 0:
        quadPos = 1;
        left = v;
        break;
      case 1:
        quadPos = 2;
        *dst++ = static_cast<uint8_t>((left << 2) | (v >> 4));
        left = v & 0x0F;
        break;
      case 2:
        quadPos = 3;
        *dst++ = static_cast<uint8_t>((left << 4) | (v >> 2));
        left = v & 0x03;
        break;
      default:
        quadPos = 0;
        *dst++ = static_cast<uint8_t>((left << 6) | v);
        left = 0;
        break;
    }
  }
  if (!complete && quadPos == 1) {
    // CPython counts the data characters from the bytes written so far: bytes / 3 * 4 + 1.
    const size_t written = static_cast<size_t>(dst - out.data());
    LenientError("Invalid base64-encoded string: number of data characters (" + std::to_string(written / 3 * 4 + 1) +
                 ") cannot be 1 more than a multiple of 4");
  }
  if (!complete && quadPos != 0) LenientError("Incorrect padding");
  out.resize(static_cast<size_t>(dst - out.data()));
  if (out.empty()) EmptyImage();
  return out;
}

}  // namespace catcomfort
