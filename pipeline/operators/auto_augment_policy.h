// torchvision 0.14's automatic augmentation policies (AutoAugment, RandAugment,
// TrivialAugmentWide), separate from the operator so that a test can replay a sample's draws:
// the augmentation spaces (which ops, in torchvision's order, and their magnitude tables), the
// per-sample sampling laws, and _apply_op on a PIL image, done with the Pillow-exact kernels of
// pipeline/kernels/augment.h and warp.h.
//
// Internal to pipeline/operators (not installed). Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "media/api.h"
#include "media/status.h"
#include "media/tensor.h"
#include "pipeline/kernels/warp.h"
#include "pipeline/random.h"

HDL_API_BEGIN
namespace hdl {

/// The operations of torchvision's _apply_op.
enum class AugmentOp : uint8_t {
  kIdentity, kShearX, kShearY, kTranslateX, kTranslateY, kRotate, kBrightness, kColor, kContrast,
  kSharpness, kPosterize, kSolarize, kAutoContrast, kEqualize, kInvert,
};

/// torchvision's name of `op` ("ShearX", "AutoContrast", ...).
const char* augment_op_name(AugmentOp op);

enum class AugmentPolicy {
  kTrivialAugmentWide, kRandAugment, kAutoAugmentImageNet, kAutoAugmentCifar10, kAutoAugmentSvhn,
  kAugMix,  ///< its own operator (augmix.h); here for its space and tables
};

/// "trivial_augment_wide", "rand_augment", "auto_augment_imagenet", "auto_augment_cifar10",
/// "auto_augment_svhn"; throws ConfigError naming the argument otherwise.
AugmentPolicy parse_augment_policy(const std::string& name);

/// A policy and its arguments (torchvision's defaults; num_ops and magnitude are RandAugment's,
/// num_magnitude_bins RandAugment's and TrivialAugmentWide's; AutoAugment uses 10 bins).
struct AugmentParams {
  AugmentPolicy policy = AugmentPolicy::kTrivialAugmentWide;
  int num_ops = 2;
  int magnitude = 9;
  int num_magnitude_bins = 31;
};

/// One _apply_op call: the op and the signed magnitude torchvision passes it (a float32 table
/// value widened to double, negated when the sign draw says so; 0 for ops without a table).
struct AugmentStep {
  AugmentOp op = AugmentOp::kIdentity;
  double magnitude = 0;
};

/// The ops a RandAugment / TrivialAugmentWide draw chooses from, in torchvision's dict order
/// (14 ops, Identity first); AugMix's 13 (its first 9 without all_ops). Empty for the
/// AutoAugment policies (they draw sub-policies).
std::span<const AugmentOp> augment_space(AugmentPolicy policy);

/// Whether `op` has a magnitude table in `policy`'s space, and whether its magnitude is signed.
bool augment_has_magnitudes(AugmentOp op);
bool augment_signed(AugmentOp op);

/// Entry `bin` of `op`'s magnitude table in `policy`'s augmentation space with `num_bins` bins,
/// for an image of height x width (translations scale with it in RandAugment, AutoAugment and
/// AugMix).
/// 0 for ops without a table. Preconditions: num_bins >= 2, 0 <= bin < num_bins.
double augment_magnitude(AugmentPolicy policy, AugmentOp op, int64_t bin, int64_t num_bins, int64_t height,
                         int64_t width);

/// One AutoAugment sub-policy entry: op, probability, magnitude bin (-1: none).
struct SubPolicyOp {
  AugmentOp op;
  double probability;
  int bin;
};

/// The 25 sub-policies (pairs) of an AutoAugment policy, in torchvision's order; empty for the
/// other policies.
std::span<const std::array<SubPolicyOp, 2>> auto_augment_sub_policies(AugmentPolicy policy);

/// One sample's draws with torchvision's sampling laws, from `rng`:
/// TrivialAugmentWide: an op uniformly, a bin uniformly (ops with a table), a fair sign (signed
/// ops); RandAugment: num_ops times an op uniformly at bin `magnitude`, with a fair sign;
/// AutoAugment: a sub-policy uniformly, two uniforms u_i and two fair signs, and op i applied
/// when u_i <= its probability. Steps in the order they apply (possibly none).
std::vector<AugmentStep> draw_augment(const AugmentParams& params, int64_t height, int64_t width,
                                      RandomStream& rng);

/// torchvision's _apply_op(img, op, magnitude, interpolation, fill) on a PIL image, written to
/// `dst` (same shape as `src`, not overlapping). `fill`: one value or one per channel (empty: 0).
Status apply_augment(const AugmentStep& step, const ConstTensorView& src, const TensorView& dst,
                     kernels::WarpFilter filter, std::span<const uint8_t> fill);

/// torchvision's _apply_op(img, op, magnitude, interpolation, fill) on a uint8 tensor (AugMix's
/// path: torchvision's tensor ops, pipeline/kernels/tensor_augment.h and color.h), written to
/// `dst` (same shape as `src`, not overlapping). `fill`: empty for None, else 1 value or one per
/// channel (floats, as the tensor path takes them). Filter: kNearest or kBilinear.
Status apply_augment_tensor(const AugmentStep& step, const ConstTensorView& src, const TensorView& dst,
                            kernels::WarpFilter filter, std::span<const double> fill);

}  // namespace hdl
HDL_API_END
