// torchvision 0.14 ColorJitter's random part, separate from the operator so that a test can
// replay a sample's draws: the argument ranges, the per-sample order and factors, and applying
// them with the colour kernels.
//
// Internal to pipeline/operators (not installed). Thread safety: pure functions.
#pragma once

#include <array>
#include <optional>
#include <utility>
#include <vector>

#include "media/api.h"
#include "media/status.h"
#include "media/tensor.h"
#include "pipeline/random.h"

HDL_API_BEGIN
namespace hdl {

/// Factor ranges of the four adjustments, in torchvision's order brightness, contrast,
/// saturation, hue; nullopt: that adjustment is off.
struct ColorJitterRanges {
  std::array<std::optional<std::pair<double, double>>, 4> range;
};

/// ColorJitter's _check_input for one argument: [] off; [v] (v >= 0) -> [max(0, 1 - v), 1 + v]
/// for brightness/contrast/saturation (`is_hue` false), [-v, v] with v <= 0.5 for hue; [lo, hi]
/// as is, within [0, inf) or [-0.5, 0.5]. A range equal to {center, center} is off.
/// Throws ConfigError naming `arg` when the values are out of bounds.
std::optional<std::pair<double, double>> parse_jitter_range(const char* arg, const std::vector<double>& v,
                                                            bool is_hue);

/// One sample's draws: the order of the four adjustments and the factor of each one that is on.
struct ColorJitterDraw {
  std::array<int, 4> order = {0, 1, 2, 3};
  std::array<std::optional<double>, 4> factor;
};

/// As torchvision's get_params: a random permutation of 0..3 (Fisher-Yates: for i = 3..1 swap
/// i with a uniform j in [0, i]), then a float32 factor uniform in its range for each adjustment
/// that is on, in the order brightness, contrast, saturation, hue.
ColorJitterDraw draw_color_jitter(const ColorJitterRanges& ranges, RandomStream& rng);

/// Applies the drawn adjustments in order to `src` (HWC uint8, 1 or 3 channels), writing `dst`
/// (same shape; the first step writes it, later steps work in place); copies when all are off.
Status apply_color_jitter(const ColorJitterDraw& draw, const ConstTensorView& src, const TensorView& dst);

}  // namespace hdl
HDL_API_END
