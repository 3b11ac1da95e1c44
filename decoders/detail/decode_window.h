// Private: the geometry every decoder shares (request validation, ROI and orientation mapping,
// DCT scale choice, oriented row writes).
//
// output_shape() and decode() of every decoder go through decode_window(), which is what makes
// the shape a decoder promises and the pixels it writes agree by construction.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>

#include "decoders/decoder.h"
#include "media/api.h"

HDL_API_BEGIN
namespace hdl::detail {

/// How one request maps onto one image: the window of the stored image a decode reads, at which
/// DCT scale, and how it is oriented into the output.
struct DecodeWindow {
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
/// and maps it onto the stored image. `max_scale_denom` is 8 for decoders that can scale in the
/// DCT domain, 1 for the others. Errors: kInvalidArgument (roi), kResourceExhausted
/// (max_pixels), kInvalidData (empty image).
Result<DecodeWindow> decode_window(const ImageInfo& info, const DecodeRequest& request,
                                   int max_scale_denom);

/// Checks that `out` is a host uint8 HWC view of exactly window.shape with unit channel stride.
Status check_output(const TensorView& out, const DecodeWindow& window);

/// Writes row `r` of the scaled stored window (window.scaled.w pixels of window.channels bytes,
/// packed) to where window.orientation puts it in `out`. Touches only `out`'s window.
void write_window_row(const uint8_t* row, int64_t r, const DecodeWindow& window, const TensorView& out);

}  // namespace hdl::detail
HDL_API_END
