// Erase kernels: torchvision F.erase (the pixel part of RandomErasing) on float32 images, in
// place: a rectangle of every channel is overwritten with per-channel values or with a patch.
//
// Views are 3-D float32, CHW (channel_axis 0, torchvision's tensor layout) or HWC
// (channel_axis 2), any strides.
//
// Thread safety: pure, reentrant functions; concurrent calls may not share `img`.
#pragma once

#include <cstdint>
#include <span>

#include "media/api.h"
#include "media/status.h"
#include "media/tensor.h"

HDL_API_BEGIN
namespace hdl::kernels {

/// Rows [top, top + height) and columns [left, left + width) of an image. Empty when height or
/// width is 0 (torchvision's get_params can return such a rectangle; erasing it is a no-op).
struct EraseRect {
  int64_t top = 0;
  int64_t left = 0;
  int64_t height = 0;
  int64_t width = 0;
};

/// img[c, rect] = values[c] for every channel c (values[0] for all when `values` has one
/// element): F.erase with v of shape [C, 1, 1] or [1, 1, 1]. Returns InvalidArgument when `img`
/// is not 3-D float32, the rectangle leaves the image, or `values` has neither 1 nor C elements.
Status erase(const TensorView& img, const EraseRect& rect, std::span<const float> values,
             int channel_axis = 0);

/// img[c, top + y, left + x] = patch[(c * height + y) * width + x]: F.erase with v a [C, h, w]
/// tensor (RandomErasing's value="random"); `patch` is in that (c, y, x) order whatever img's
/// layout. Returns InvalidArgument as erase(), or when patch has not C * height * width values.
Status erase_patch(const TensorView& img, const EraseRect& rect, std::span<const float> patch,
                   int channel_axis = 0);

}  // namespace hdl::kernels
HDL_API_END
