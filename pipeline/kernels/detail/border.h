// Border index rules shared by pad, crop and blur (internal to pipeline/kernels).
//
// Thread safety: pure functions.
#pragma once

#include <algorithm>
#include <cstdint>

#include "media/api.h"

HDL_API_BEGIN
namespace hdl::kernels::detail {

/// Index `i` of a line of `n` >= 1 pixels reflected without repeating the edge pixel
/// (torch 'reflect': -1 -> 1), folded as often as needed.
inline int64_t reflect_index(int64_t i, int64_t n) {
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

/// Index `i` reflected repeating the edge pixel (torchvision 'symmetric': -1 -> 0).
inline int64_t symmetric_index(int64_t i, int64_t n) {
  const int64_t period = 2 * n;
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - 1 - i;
}

/// Index `i` clamped to the line (torchvision 'edge', torch 'replicate').
inline int64_t edge_index(int64_t i, int64_t n) { return std::clamp<int64_t>(i, 0, n - 1); }

}  // namespace hdl::kernels::detail
HDL_API_END
