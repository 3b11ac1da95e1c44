// torchvision 0.14's AugMix, separate from the operator so that a test can replay a sample's
// draws: the mixing weights (Dirichlet), the augmentation chains (depth, ops, magnitude bins,
// signs) and the mix. Its _apply_op on a uint8 tensor (AugMix converts PIL images to tensors
// first, so its ops are torchvision's tensor ops) is apply_augment_tensor, in
// auto_augment_policy.h beside the PIL path's, one switch for both.
//
// Internal to pipeline/operators (not installed). Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "media/api.h"
#include "media/status.h"
#include "media/tensor.h"
#include "pipeline/kernels/warp.h"
#include "pipeline/operators/auto_augment_policy.h"
#include "pipeline/random.h"

HDL_API_BEGIN
namespace hdl {

/// AugMix's arguments (torchvision's defaults).
struct AugMixParams {
  int severity = 3;        ///< magnitude bins drawn from: [0, severity) of 10
  int mixture_width = 3;   ///< chains mixed
  int chain_depth = -1;    ///< ops per chain; <= 0: uniform in {1, 2, 3} per chain
  double alpha = 1.0;      ///< Dirichlet / Beta concentration
  bool all_ops = true;     ///< include Brightness, Color, Contrast, Sharpness
};

/// One sample's draws: the original image's weight, each chain's weight and its steps.
struct AugMixDraw {
  float original_weight = 1;
  std::vector<float> chain_weights;
  std::vector<std::vector<AugmentStep>> chains;
};

/// torchvision's laws: (m0, m1) ~ Dirichlet(alpha, alpha); chain weights ~
/// Dirichlet(alpha x mixture_width) * m1 (float32); per chain a depth, then per op an op
/// uniformly from the space, a bin uniformly in [0, severity) of the 10-bin tables for an image
/// of height x width, and a fair sign for signed ops. Gamma variates by Marsaglia-Tsang.
AugMixDraw draw_augmix(const AugMixParams& params, int64_t height, int64_t width, RandomStream& rng);

/// The mix: out = trunc(m0 * src + sum_i w_i * chain_i) in float32, accumulated in torch's order
/// (`mix` is float32 scratch of src's element count). Views HWC uint8 of one shape.
void augmix_accumulate(const ConstTensorView& image, float weight, std::span<float> mix, bool first);
void augmix_store(std::span<const float> mix, const TensorView& dst);

}  // namespace hdl
HDL_API_END
