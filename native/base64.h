// Base64 decoding for analyze() items. Throws ItemError (invalid_base64 / empty_image).
#pragma once

#include <cstddef>
#include <cstdint>

#include "image_blocks.h"

namespace catcomfort {

// v2: standard alphabet only, length % 4 == 0, '=' only as the last one or two characters;
// an optional `data:image/<type>;base64,` prefix (type = [a-z0-9.+-]+) is skipped.
ImageBytes DecodeBase64Strict(const uint8_t* text, size_t length);

// v1: Python's base64.b64decode(s) (binascii.a2b_base64 with strict_mode=False):
// characters outside the alphabet are skipped, decoding stops at the first complete pad
// sequence, and a dangling quad is "Incorrect padding" (or, with one character left over,
// "Invalid base64-encoded string: number of data characters (N) cannot be 1 more than a multiple
// of 4"); the ItemError messages are CPython's words. `fromString`: the data was a JS string,
// and Python refuses a str with non-ASCII characters (ValueError) where it skips such bytes.
ImageBytes DecodeBase64Lenient(const uint8_t* text, size_t length, bool fromString);

}  // namespace catcomfort
