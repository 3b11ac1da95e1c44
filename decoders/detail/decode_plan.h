// Private: the geometry every decoder shares (request validation, ROI and orientation mapping,
// DCT scale choice, oriented row writes) and the pixel conversions that must match Pillow.
//
// output_shape() and decode() of every decoder go through plan_decode(), which is what makes
// the shape a decoder promises and the pixels it writes agree by construction.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>

#include "decoders/decoder.h"
#include "media/api.h"

HDL_API_BEGIN
namespace hdl::detail {

/// How one request maps onto one image.
struct DecodePlan {
  int64_t width = 0;    ///< stored image width, full resolution
  int64_t height = 0;   ///< stored image height, full resolution
  int orientation = 1;  ///< EXIF orientation to apply (1 when the request does not ask)
  int scale_denom = 1;  ///< 1, 2, 4 or 8
  Roi stored;           ///< the window in stored coordinates at full resolution
  /// The window in stored coordinates at 1/scale_denom: x/d and y/d rounded down, w/d and
  /// h/d rounded up. Always inside the scaled image (ceil(width/d) x ceil(height/d)).
  Roi scaled;
  int channels = 3;     ///< output channels
  Shape shape;          ///< HWC output shape, oriented
};

/// Validates `request` against `info` (roi inside the oriented image, pixel limit, orientation)
/// and plans the decode. `max_scale_denom` is 8 for decoders that can scale in the DCT domain,
/// 1 for the others. Errors: kInvalidArgument (roi), kResourceExhausted (max_pixels),
/// kInvalidData (empty image).
Result<DecodePlan> plan_decode(const ImageInfo& info, const DecodeRequest& request,
                               int max_scale_denom);

/// Checks that `out` is a host uint8 HWC view of exactly plan.shape with unit channel stride.
Status check_output(const TensorView& out, const DecodePlan& plan);

/// Writes row `r` of the scaled stored window (plan.scaled.w pixels of plan.channels bytes,
/// packed) to where plan.orientation puts it in `out`. Touches only `out`'s window.
void write_window_row(const uint8_t* row, int64_t r, const DecodePlan& plan, const TensorView& out);

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
