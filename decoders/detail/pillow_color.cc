#include "decoders/detail/pillow_color.h"

namespace hdl::detail {

void cmyk_to_color(const uint8_t* cmyk, uint8_t* dst, int64_t n, ColorFormat color) {
  // Pillow reads libjpeg's CMYK as "CMYK;I" (inverted: C = 255 - c) and converts with
  // R = clip(nk - nk * C / 255) where nk = 255 - K = k and the division is its MULDIV255.
  auto channel = [](uint32_t stored, uint32_t nk) {
    uint32_t t = (255 - stored) * nk + 128;
    int v = int(nk) - int(((t >> 8) + t) >> 8);
    return uint8_t(v < 0 ? 0 : v);
  };
  for (int64_t i = 0; i < n; ++i, cmyk += 4) {
    uint32_t nk = cmyk[3];
    uint8_t r = channel(cmyk[0], nk), g = channel(cmyk[1], nk), b = channel(cmyk[2], nk);
    switch (color) {
      case ColorFormat::kRGB: dst[0] = r; dst[1] = g; dst[2] = b; dst += 3; break;
      case ColorFormat::kBGR: dst[0] = b; dst[1] = g; dst[2] = r; dst += 3; break;
      case ColorFormat::kGray: *dst++ = luma(r, g, b); break;
    }
  }
}

void rgb_to_gray(const uint8_t* src, int src_stride, uint8_t* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i, src += src_stride) dst[i] = luma(src[0], src[1], src[2]);
}

}  // namespace hdl::detail
