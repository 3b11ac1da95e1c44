// timm's automatic augmentation (timm.data.auto_augment, timm 0.9 to 1.0): RandAugment,
// AutoAugment and AugMixAugment built of timm's AugmentOp, separate from the operator so that a test can replay a
// sample's draws. timm differs from torchvision's policies (auto_augment_policy.h) in its op set
// (SolarizeAdd, the *Increasing variants, relative translations, Desaturate, GaussianBlur), its
// level-to-argument functions, a probability per op, Gaussian or uniform magnitude noise, a
// random choice of resampling filter per geometric op, weighted op choice without replacement,
// and Image.transform matrices without torchvision's centring. Pixels are Pillow's (the kernels
// of augment.h, color.h, warp.h and pil_blur.h), as timm applies every op to a PIL image.
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
#include "pipeline/kernels/pil_blur.h"
#include "pipeline/kernels/warp.h"
#include "pipeline/random.h"

HDL_API_BEGIN
namespace hdl {

/// timm's op names (NAME_TO_OP's keys).
enum class TimmOp : uint8_t {
  kAutoContrast, kEqualize, kInvert, kRotate, kPosterize, kPosterizeIncreasing, kPosterizeOriginal,
  kSolarize, kSolarizeIncreasing, kSolarizeAdd, kColor, kColorIncreasing, kContrast, kContrastIncreasing,
  kBrightness, kBrightnessIncreasing, kSharpness, kSharpnessIncreasing, kShearX, kShearY, kTranslateX,
  kTranslateY, kTranslateXRel, kTranslateYRel, kDesaturate, kGaussianBlur, kGaussianBlurRand,
};

/// timm's name of `op` ("SolarizeAdd", ...).
const char* timm_op_name(TimmOp op);

/// The op called `name`; throws ConfigError naming `arg` and the known names otherwise.
TimmOp parse_timm_op(const std::string& name, const char* arg = "ops");

/// Whether `op` goes through Image.transform / Image.rotate (and so draws a filter).
bool timm_op_geometric(TimmOp op);

/// One timm policy: the AugmentOps in order, each with its probability and magnitude, and the
/// hyper-parameters they share.
struct TimmAugmentParams {
  enum class Policy { kRandAugment, kAutoAugment, kAugMix } policy = Policy::kRandAugment;
  std::vector<TimmOp> ops;
  std::vector<double> probabilities;  ///< per op: applied when not (random() > p)
  std::vector<double> magnitudes;     ///< per op: level before noise and clamping
  /// kAutoAugment: sizes of the sub-policies the ops form, in order (they sum to ops.size()).
  std::vector<int> groups;
  int num_layers = 2;  ///< kRandAugment: ops drawn per image
  /// kRandAugment: empty draws ops uniformly with replacement; else these weights (normalised),
  /// without replacement (numpy's choice(replace=False, p=...)).
  std::vector<double> weights;
  double magnitude_std = 0;        ///< > 0: random.gauss(magnitude, std)
  bool magnitude_uniform = false;  ///< magnitude_std inf: random.uniform(0, magnitude)
  double magnitude_max = 0;        ///< upper clamp of the level; 0 means timm's _LEVEL_DENOM (10)
  double translate_pct = 0.45;     ///< TranslateXRel / YRel at level 10
  double translate_const = 250;    ///< TranslateX / Y (pixels) at level 10
  /// One filter: always it; several: random.choice among them per geometric op.
  std::vector<kernels::WarpFilter> filters = {kernels::WarpFilter::kBicubic};
  int width = 3;       ///< kAugMix: chains mixed
  int depth = -1;      ///< kAugMix: ops per chain; <= 0: uniform in {1, 2, 3} per chain
  double alpha = 1.0;  ///< kAugMix: Dirichlet / Beta concentration
};

/// Checks sizes and ranges; throws ConfigError naming the argument.
void validate(const TimmAugmentParams& p);

/// One AugmentOp call that applies: the op, the argument its level function gives (signed
/// already: degrees, shear factor, pixels, enhance factor, bits, threshold, addend, radius), and
/// the filter of a geometric op.
struct TimmStep {
  TimmOp op = TimmOp::kAutoContrast;
  double arg = 0;
  kernels::WarpFilter filter = kernels::WarpFilter::kBicubic;
};

/// timm's LEVEL_TO_ARG[op](level, hparams) for a clamped level, with `negate` standing for
/// _randomly_negate's draw (ignored by unsigned ops). GaussianBlurRand's argument is the upper
/// factor (its radius is drawn in draw_timm_augment). `width` / `height`: the image's, for the
/// relative translations (which timm scales by img.size at the call).
double timm_level_arg(const TimmAugmentParams& p, TimmOp op, double level, bool negate, int64_t width,
                      int64_t height);

/// One image's draws with timm's laws, from `rng`: the ops (RandAugment: num_layers of them;
/// AutoAugment: a sub-policy uniformly), then per op in order: skipped when u > probability,
/// the level (noise, clamped to [0, magnitude_max or 10]), the sign, the filter, the blur radius.
std::vector<TimmStep> draw_timm_augment(const TimmAugmentParams& p, int64_t height, int64_t width,
                                        RandomStream& rng);

/// One image's AugMix draws (policy kAugMix), in AugMixAugment's order: the chain weights
/// (numpy's dirichlet([alpha] * width) as float32), the final blend factor (beta(alpha, alpha)
/// as float32), then per chain its depth and its ops (uniformly with replacement), each op's
/// draws as draw_timm_augment's.
struct TimmAugMixDraw {
  std::vector<float> weights;
  float blend = 0;
  std::vector<std::vector<TimmStep>> chains;
};
TimmAugMixDraw draw_timm_augmix(const TimmAugmentParams& p, int64_t height, int64_t width, RandomStream& rng);

/// timm's NAME_TO_OP[op](img, arg, fillcolor=fill, resample=filter) on a PIL image, written to
/// `dst` (same shape as `src`, not overlapping). `fill`: one value or one per channel.
Status apply_timm_step(const TimmStep& step, const ConstTensorView& src, const TensorView& dst,
                       std::span<const uint8_t> fill, kernels::PilBlurWorkspace& ws);

}  // namespace hdl
HDL_API_END
