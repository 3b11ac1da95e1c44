// Per-axis weight tables for the separable resize (internal to pipeline/kernels).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "media/api.h"
#include "pipeline/kernels/resize.h"

HDL_API_BEGIN
namespace hdl::kernels::detail {

/// Fills the table of one axis resized from `in` to `out` pixels: output i is
/// sum_k weights[i * taps + k] * input[start[i] + k], with start[i] + taps <= in (taps past the
/// filter's support carry weight 0). Returns taps (>= 1). Preconditions: in, out >= 1.
/// With options.pillow, PIL.Image.resize's tables (antialias ignored; weights in Pillow's 22-bit
/// fixed point).
int compute_resize_weights(int64_t in, int64_t out, const ResizeOptions& options,
                           std::vector<float>& weights, std::vector<int32_t>& start);

/// compute_resize_weights through a cache of tables (created in `cache` on first use): copies
/// a table computed before for the same (in, out, filter, antialias, pillow), else computes and
/// keeps it. The cache holds at most a few MB; when full it starts over.
int cached_resize_weights(int64_t in, int64_t out, const ResizeOptions& options,
                          std::vector<float>& weights, std::vector<int32_t>& start,
                          std::unique_ptr<WeightTableCache, WeightTableCacheDeleter>& cache);

}  // namespace hdl::kernels::detail
HDL_API_END
