#include "base64.h"

#include <array>
#include <cstring>
#include <string>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

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

[[noreturn]] void InvalidBase64() { throw ItemError{ItemErrorCode::InvalidBase64}; }
// Lenient (v1) failures say which of CPython's binascii / str.encode errors (3.11) it would raise.
[[noreturn]] void LenientError(Base64Reason reason, int64_t count = 0) { throw ItemError{ItemErrorCode::InvalidBase64, reason, count}; }
[[noreturn]] void EmptyImage() { throw ItemError{ItemErrorCode::EmptyImage}; }

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

// Decodes one quad of 4 alphabet characters into 3 bytes; false (nothing written) when any of
// them is outside the alphabet ('=' included).
inline bool DecodeQuad(const uint8_t* in, uint8_t* out) {
  const uint32_t a = kTable[in[0]];
  const uint32_t b = kTable[in[1]];
  const uint32_t c = kTable[in[2]];
  const uint32_t d = kTable[in[3]];
  if ((a | b | c | d) & 0x80u) return false;  // kInvalid has the high bit, no valid value does
  const uint32_t v = (a << 18) | (b << 12) | (c << 6) | d;
  out[0] = static_cast<uint8_t>(v >> 16);
  out[1] = static_cast<uint8_t>(v >> 8);
  out[2] = static_cast<uint8_t>(v);
  return true;
}

// Whole quads from in: as many as `quads`, stopping before the first one with a character
// outside the alphabet. Returns the quads decoded (3 bytes each written to out).
size_t DecodeQuadsScalar(const uint8_t* in, size_t quads, uint8_t* out) {
  size_t q = 0;
  for (; q < quads; ++q) {
    if (!DecodeQuad(in + q * 4, out + q * 3)) break;
  }
  return q;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define CATCOMFORT_BASE64_AVX2 1
// 32 characters -> 24 bytes per step (the vectorised range check and translation of
// Muła/Lemire/aklomp): in blocks of 32 while all 32 are alphabet characters. Writes 32 bytes per
// block (the last 8 are scratch), so out needs 8 bytes of room past the decoded data. Returns the
// blocks decoded.
__attribute__((target("avx2"))) size_t DecodeBlocksAvx2(const uint8_t* in, size_t blocks, uint8_t* out) {
  const __m256i lutLo = _mm256_setr_epi8(0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x13, 0x1A,
                                         0x1B, 0x1B, 0x1B, 0x1A, 0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
                                         0x11, 0x11, 0x13, 0x1A, 0x1B, 0x1B, 0x1B, 0x1A);
  const __m256i lutHi = _mm256_setr_epi8(0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08, 0x10, 0x10, 0x10, 0x10,
                                         0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08,
                                         0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10);
  const __m256i lutRoll = _mm256_setr_epi8(0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0, 0, 16, 19, 4,
                                           -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m256i mask2F = _mm256_set1_epi8(0x2F);
  const __m256i mergeAB = _mm256_set1_epi32(0x01400140);
  const __m256i mergeABC = _mm256_set1_epi32(0x00011000);
  const __m256i pack = _mm256_setr_epi8(2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1, 2, 1, 0, 6, 5, 4,
                                        10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, 7, 7);
  size_t b = 0;
  for (; b < blocks; ++b) {
    __m256i str = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + b * 32));
    const __m256i hiNibbles = _mm256_and_si256(_mm256_srli_epi32(str, 4), mask2F);
    const __m256i loNibbles = _mm256_and_si256(str, mask2F);
    const __m256i hi = _mm256_shuffle_epi8(lutHi, hiNibbles);
    const __m256i lo = _mm256_shuffle_epi8(lutLo, loNibbles);
    if (!_mm256_testz_si256(lo, hi)) break;  // a character outside the alphabet
    const __m256i eq2F = _mm256_cmpeq_epi8(str, mask2F);
    str = _mm256_add_epi8(str, _mm256_shuffle_epi8(lutRoll, _mm256_add_epi8(eq2F, hiNibbles)));
    // 6-bit values -> 24-bit groups -> packed bytes.
    const __m256i ab = _mm256_maddubs_epi16(str, mergeAB);
    __m256i packed = _mm256_madd_epi16(ab, mergeABC);
    packed = _mm256_shuffle_epi8(packed, pack);
    packed = _mm256_permutevar8x32_epi32(packed, lanes);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + b * 24), packed);
  }
  return b;
}

bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}
#endif

// Whole quads of alphabet characters from in (at most `quads`), stopping before the first quad
// with any other character; out needs 8 bytes of room past 3 * quads. Returns the quads decoded.
size_t DecodeQuads(const uint8_t* in, size_t quads, uint8_t* out) {
  size_t done = 0;
#ifdef CATCOMFORT_BASE64_AVX2
  if (quads >= 8 && HasAvx2()) {
    const size_t blocks = DecodeBlocksAvx2(in, quads / 8, out);
    done = blocks * 8;
    if (blocks < quads / 8) return done + DecodeQuadsScalar(in + done * 4, 8, out + done * 3);
  }
#endif
  return done + DecodeQuadsScalar(in + done * 4, quads - done, out + done * 3);
}

// Room past the decoded bytes that DecodeQuads may scribble on.
constexpr size_t kSlack = 8;

}  // namespace

ImageBytes DecodeBase64Strict(const uint8_t* text, size_t length) {
  size_t prefix = DataUrlPrefix(text, length);
  text += prefix;
  length -= prefix;
  if (length == 0) EmptyImage();
  if (length % 4 != 0) InvalidBase64();
  size_t pads = 0;
  if (text[length - 1] == '=') pads = text[length - 2] == '=' ? 2 : 1;
  const size_t dataChars = length - pads;
  const size_t quads = dataChars / 4;
  const size_t size = quads * 3 + (pads == 0 ? 0 : 3 - pads);
  ImageBytes out(size + kSlack);
  uint8_t* dst = out.data();
  if (DecodeQuads(text, quads, dst) != quads) InvalidBase64();  // includes '=' before the final padding
  // The 2 or 3 data characters before the padding (their spare low bits are not checked).
  const uint8_t* tail = text + quads * 4;
  dst += quads * 3;
  const size_t rest = dataChars - quads * 4;
  if (rest > 0) {
    const uint32_t a = kTable[tail[0]];
    const uint32_t b = kTable[tail[1]];
    const uint32_t c = rest > 2 ? kTable[tail[2]] : 0;
    if ((a | b | c) & 0x80u) InvalidBase64();
    dst[0] = static_cast<uint8_t>((a << 2) | (b >> 4));
    if (rest > 2) dst[1] = static_cast<uint8_t>(((b & 0x0F) << 4) | (c >> 2));
  }
  out.resize(size);
  if (out.empty()) EmptyImage();
  return out;
}

ImageBytes DecodeBase64Lenient(const uint8_t* text, size_t length, bool fromString) {
  if (fromString) {
    uint8_t high = 0;
    for (size_t i = 0; i < length; ++i) high |= text[i];
    // Python: ValueError from a2b_base64's str argument conversion.
    if (high & 0x80) LenientError(Base64Reason::NonAscii);
  }
  // Upper bound: every character a data character.
  ImageBytes out(length / 4 * 3 + 3 + kSlack);
  uint8_t* dst = out.data();
  int quadPos = 0;
  int pads = 0;
  uint8_t left = 0;
  bool complete = false;
  size_t i = 0;
  while (i < length && !complete) {
    if (quadPos == 0) {
      // Fast path: runs of whole quads of alphabet characters (no '=', nothing skipped) decode
      // exactly as the character loop below would, leaving quadPos at 0.
      const size_t quads = DecodeQuads(text + i, (length - i) / 4, dst);
      if (quads > 0) {
        i += quads * 4;
        dst += quads * 3;
        pads = 0;
        if (i >= length) break;
      }
    }
    uint8_t c = text[i++];
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
    LenientError(Base64Reason::DataCharacters, static_cast<int64_t>(written / 3 * 4 + 1));
  }
  if (!complete && quadPos != 0) LenientError(Base64Reason::IncorrectPadding);
  out.resize(static_cast<size_t>(dst - out.data()));
  if (out.empty()) EmptyImage();
  return out;
}

}  // namespace catcomfort
