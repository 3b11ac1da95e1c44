// The pixel walk of the per-pixel uint8 kernels (internal to pipeline/kernels): color.cc and
// augment.cc visit every pixel of HWC uint8 views through it.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>

#include "media/api.h"
#include "media/tensor.h"

HDL_API_BEGIN
namespace hdl::kernels::detail {

/// Calls f(s, sc, d, dc) for every pixel of `src` (its H x W, row by row) and the same pixel of
/// `dst`: the two pixels' first channels and their channel strides (channel c at s[c * sc]).
template <typename F>
void for_each_pixel(const ConstTensorView& src, const TensorView& dst, F&& f) {
  const auto* sp = static_cast<const uint8_t*>(src.data);
  auto* dp = static_cast<uint8_t*>(dst.data);
  const int64_t sc = src.strides[2], dc = dst.strides[2];
  for (int64_t y = 0; y < src.shape[0]; ++y) {
    const uint8_t* s = sp + y * src.strides[0];
    uint8_t* d = dp + y * dst.strides[0];
    for (int64_t x = 0; x < src.shape[1]; ++x, s += src.strides[1], d += dst.strides[1]) f(s, sc, d, dc);
  }
}

/// Calls f(s, sc) for every pixel of `src`, row by row.
template <typename F>
void for_each_pixel(const ConstTensorView& src, F&& f) {
  const auto* sp = static_cast<const uint8_t*>(src.data);
  const int64_t sc = src.strides[2];
  for (int64_t y = 0; y < src.shape[0]; ++y) {
    const uint8_t* s = sp + y * src.strides[0];
    for (int64_t x = 0; x < src.shape[1]; ++x, s += src.strides[1]) f(s, sc);
  }
}

}  // namespace hdl::kernels::detail
HDL_API_END
