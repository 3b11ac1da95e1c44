// Element-type helpers shared by the kernels (internal to pipeline/kernels).
//
// Thread safety: pure functions.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "media/api.h"
#include "media/dtype.h"
#include "media/tensor.h"

HDL_API_BEGIN
namespace hdl::kernels::detail {

/// Calls f.template operator()<U>() with the unsigned integer type U of the element size of `t`
/// (for kernels that only move elements).
template <typename F>
void dispatch_by_size(DType t, F&& f) {
  switch (dtype_size(t)) {
    case 1: f.template operator()<uint8_t>(); break;
    case 2: f.template operator()<uint16_t>(); break;
    case 4: f.template operator()<uint32_t>(); break;
    default: f.template operator()<uint64_t>(); break;
  }
}

/// Float to integer: truncation toward zero (torch .to()), saturated to the type's range
/// (torch leaves out-of-range values undefined); NaN becomes 0.
template <typename I>
I saturate_cast(double v) {
  if (!(v == v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<I>::lowest())) return std::numeric_limits<I>::lowest();
  if (v >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

/// `v` converted to dtype `t`, as the element's bytes in the low bytes of a uint64.
inline uint64_t to_element_bits(double v, DType t) {
  uint64_t bits = 0;
  auto put = [&bits](auto x) { std::memcpy(&bits, &x, sizeof(x)); };
  switch (t) {
    case DType::kU8: put(saturate_cast<uint8_t>(v)); break;
    case DType::kI16: put(saturate_cast<int16_t>(v)); break;
    case DType::kI32: put(saturate_cast<int32_t>(v)); break;
    case DType::kI64: put(saturate_cast<int64_t>(v)); break;
    case DType::kF16: put(float_to_half(static_cast<float>(v))); break;
    case DType::kBF16: put(float_to_bfloat16(static_cast<float>(v))); break;
    case DType::kF32: put(static_cast<float>(v)); break;
  }
  return bits;
}

/// Offset in elements of (a, b, c) in a 3-D view.
template <typename View>
int64_t offset3(const View& v, int64_t a, int64_t b, int64_t c) {
  return a * v.strides[0] + b * v.strides[1] + c * v.strides[2];
}

}  // namespace hdl::kernels::detail
HDL_API_END
