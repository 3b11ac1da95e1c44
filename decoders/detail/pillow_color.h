// Private: the pixel conversions of the image decoders that must match Pillow's, value for value.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>

#include "decoders/decoder.h"
#include "media/api.h"

HDL_API_BEGIN
namespace hdl::detail {

/// Converts `n` CMYK pixels as libjpeg outputs them (Adobe convention: stored inverted) to
/// `color` exactly as Pillow does: rawmode "CMYK;I", then convert("RGB") (and "L" from that).
void cmyk_to_color(const uint8_t* cmyk, uint8_t* dst, int64_t n, ColorFormat color);

/// Pillow's ITU-R 601 luma, convert("L"): (19595 R + 38470 G + 7471 B + 2^15) >> 16, reading
/// pixels `src_stride` bytes apart.
inline uint8_t luma(uint32_t r, uint32_t g, uint32_t b) {
  return uint8_t((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16);
}
void rgb_to_gray(const uint8_t* src, int src_stride, uint8_t* dst, int64_t n);

}  // namespace hdl::detail
HDL_API_END
