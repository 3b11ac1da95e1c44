#include "pipeline/operators/auto_augment_policy.h"

#include <array>
#include <cmath>

#include "pipeline/errors.h"
#include "pipeline/kernels/augment.h"
#include "pipeline/kernels/color.h"
#include "pipeline/kernels/tensor_augment.h"

namespace hdl {
namespace {

using O = AugmentOp;
using SubPolicies = std::array<std::array<SubPolicyOp, 2>, 25>;

// torchvision 0.14 AutoAugment._get_policies: (op, probability, magnitude bin or -1).
constexpr SubPolicies kImageNet = {{
    {{{O::kPosterize, 0.4, 8}, {O::kRotate, 0.6, 9}}},
    {{{O::kSolarize, 0.6, 5}, {O::kAutoContrast, 0.6, -1}}},
    {{{O::kEqualize, 0.8, -1}, {O::kEqualize, 0.6, -1}}},
    {{{O::kPosterize, 0.6, 7}, {O::kPosterize, 0.6, 6}}},
    {{{O::kEqualize, 0.4, -1}, {O::kSolarize, 0.2, 4}}},
    {{{O::kEqualize, 0.4, -1}, {O::kRotate, 0.8, 8}}},
    {{{O::kSolarize, 0.6, 3}, {O::kEqualize, 0.6, -1}}},
    {{{O::kPosterize, 0.8, 5}, {O::kEqualize, 1.0, -1}}},
    {{{O::kRotate, 0.2, 3}, {O::kSolarize, 0.6, 8}}},
    {{{O::kEqualize, 0.6, -1}, {O::kPosterize, 0.4, 6}}},
    {{{O::kRotate, 0.8, 8}, {O::kColor, 0.4, 0}}},
    {{{O::kRotate, 0.4, 9}, {O::kEqualize, 0.6, -1}}},
    {{{O::kEqualize, 0.0, -1}, {O::kEqualize, 0.8, -1}}},
    {{{O::kInvert, 0.6, -1}, {O::kEqualize, 1.0, -1}}},
    {{{O::kColor, 0.6, 4}, {O::kContrast, 1.0, 8}}},
    {{{O::kRotate, 0.8, 8}, {O::kColor, 1.0, 2}}},
    {{{O::kColor, 0.8, 8}, {O::kSolarize, 0.8, 7}}},
    {{{O::kSharpness, 0.4, 7}, {O::kInvert, 0.6, -1}}},
    {{{O::kShearX, 0.6, 5}, {O::kEqualize, 1.0, -1}}},
    {{{O::kColor, 0.4, 0}, {O::kEqualize, 0.6, -1}}},
    {{{O::kEqualize, 0.4, -1}, {O::kSolarize, 0.2, 4}}},
    {{{O::kSolarize, 0.6, 5}, {O::kAutoContrast, 0.6, -1}}},
    {{{O::kInvert, 0.6, -1}, {O::kEqualize, 1.0, -1}}},
    {{{O::kColor, 0.6, 4}, {O::kContrast, 1.0, 8}}},
    {{{O::kEqualize, 0.8, -1}, {O::kEqualize, 0.6, -1}}},
}};
constexpr SubPolicies kCifar10 = {{
    {{{O::kInvert, 0.1, -1}, {O::kContrast, 0.2, 6}}},
    {{{O::kRotate, 0.7, 2}, {O::kTranslateX, 0.3, 9}}},
    {{{O::kSharpness, 0.8, 1}, {O::kSharpness, 0.9, 3}}},
    {{{O::kShearY, 0.5, 8}, {O::kTranslateY, 0.7, 9}}},
    {{{O::kAutoContrast, 0.5, -1}, {O::kEqualize, 0.9, -1}}},
    {{{O::kShearY, 0.2, 7}, {O::kPosterize, 0.3, 7}}},
    {{{O::kColor, 0.4, 3}, {O::kBrightness, 0.6, 7}}},
    {{{O::kSharpness, 0.3, 9}, {O::kBrightness, 0.7, 9}}},
    {{{O::kEqualize, 0.6, -1}, {O::kEqualize, 0.5, -1}}},
    {{{O::kContrast, 0.6, 7}, {O::kSharpness, 0.6, 5}}},
    {{{O::kColor, 0.7, 7}, {O::kTranslateX, 0.5, 8}}},
    {{{O::kEqualize, 0.3, -1}, {O::kAutoContrast, 0.4, -1}}},
    {{{O::kTranslateY, 0.4, 3}, {O::kSharpness, 0.2, 6}}},
    {{{O::kBrightness, 0.9, 6}, {O::kColor, 0.2, 8}}},
    {{{O::kSolarize, 0.5, 2}, {O::kInvert, 0.0, -1}}},
    {{{O::kEqualize, 0.2, -1}, {O::kAutoContrast, 0.6, -1}}},
    {{{O::kEqualize, 0.2, -1}, {O::kEqualize, 0.6, -1}}},
    {{{O::kColor, 0.9, 9}, {O::kEqualize, 0.6, -1}}},
    {{{O::kAutoContrast, 0.8, -1}, {O::kSolarize, 0.2, 8}}},
    {{{O::kBrightness, 0.1, 3}, {O::kColor, 0.7, 0}}},
    {{{O::kSolarize, 0.4, 5}, {O::kAutoContrast, 0.9, -1}}},
    {{{O::kTranslateY, 0.9, 9}, {O::kTranslateY, 0.7, 9}}},
    {{{O::kAutoContrast, 0.9, -1}, {O::kSolarize, 0.8, 3}}},
    {{{O::kEqualize, 0.8, -1}, {O::kInvert, 0.1, -1}}},
    {{{O::kTranslateY, 0.7, 9}, {O::kAutoContrast, 0.9, -1}}},
}};
constexpr SubPolicies kSvhn = {{
    {{{O::kShearX, 0.9, 4}, {O::kInvert, 0.2, -1}}},
    {{{O::kShearY, 0.9, 8}, {O::kInvert, 0.7, -1}}},
    {{{O::kEqualize, 0.6, -1}, {O::kSolarize, 0.6, 6}}},
    {{{O::kInvert, 0.9, -1}, {O::kEqualize, 0.6, -1}}},
    {{{O::kEqualize, 0.6, -1}, {O::kRotate, 0.9, 3}}},
    {{{O::kShearX, 0.9, 4}, {O::kAutoContrast, 0.8, -1}}},
    {{{O::kShearY, 0.9, 8}, {O::kInvert, 0.4, -1}}},
    {{{O::kShearY, 0.9, 5}, {O::kSolarize, 0.2, 6}}},
    {{{O::kInvert, 0.9, -1}, {O::kAutoContrast, 0.8, -1}}},
    {{{O::kEqualize, 0.6, -1}, {O::kRotate, 0.9, 3}}},
    {{{O::kShearX, 0.9, 4}, {O::kSolarize, 0.3, 3}}},
    {{{O::kShearY, 0.8, 8}, {O::kInvert, 0.7, -1}}},
    {{{O::kEqualize, 0.9, -1}, {O::kTranslateY, 0.6, 6}}},
    {{{O::kInvert, 0.9, -1}, {O::kEqualize, 0.6, -1}}},
    {{{O::kContrast, 0.3, 3}, {O::kRotate, 0.8, 4}}},
    {{{O::kInvert, 0.8, -1}, {O::kTranslateY, 0.0, 2}}},
    {{{O::kShearY, 0.7, 6}, {O::kSolarize, 0.4, 8}}},
    {{{O::kInvert, 0.6, -1}, {O::kRotate, 0.8, 4}}},
    {{{O::kShearY, 0.3, 7}, {O::kTranslateX, 0.9, 3}}},
    {{{O::kShearX, 0.1, 6}, {O::kInvert, 0.6, -1}}},
    {{{O::kSolarize, 0.7, 2}, {O::kTranslateY, 0.6, 7}}},
    {{{O::kShearY, 0.8, 4}, {O::kInvert, 0.8, -1}}},
    {{{O::kShearX, 0.7, 9}, {O::kTranslateY, 0.8, 3}}},
    {{{O::kShearY, 0.8, 5}, {O::kAutoContrast, 0.7, -1}}},
    {{{O::kShearX, 0.7, 2}, {O::kInvert, 0.1, -1}}},
}};

// RandAugment's and TrivialAugmentWide's augmentation space, in its dict order.
constexpr std::array<AugmentOp, 14> kWideSpace = {
    O::kIdentity, O::kShearX, O::kShearY, O::kTranslateX, O::kTranslateY, O::kRotate, O::kBrightness,
    O::kColor, O::kContrast, O::kSharpness, O::kPosterize, O::kSolarize, O::kAutoContrast, O::kEqualize};

// AugMix's space: the geometric and histogram ops, then (all_ops) the ImageEnhance ones.
constexpr std::array<AugmentOp, 13> kAugMixSpace = {
    O::kShearX, O::kShearY, O::kTranslateX, O::kTranslateY, O::kRotate, O::kPosterize, O::kSolarize,
    O::kAutoContrast, O::kEqualize, O::kBrightness, O::kColor, O::kContrast, O::kSharpness};

// CPython's math.degrees constant (180.0 / Py_MATH_PI).
constexpr double kRadToDeg = 180.0 / 3.14159265358979323846;

// 8 - (torch.arange(n) / ((n - 1) / d)).round().int(), entry k: a float32 division by the
// float32 divisor, rounded half to even.
double posterize_bits(int base, int64_t k, int64_t n, double d) {
  const float q = static_cast<float>(k) / static_cast<float>((n - 1) / d);
  return base - static_cast<int>(std::nearbyint(q));
}

}  // namespace

const char* augment_op_name(AugmentOp op) {
  static constexpr const char* kNames[] = {"Identity", "ShearX", "ShearY", "TranslateX", "TranslateY",
                                           "Rotate", "Brightness", "Color", "Contrast", "Sharpness",
                                           "Posterize", "Solarize", "AutoContrast", "Equalize", "Invert"};
  return kNames[static_cast<int>(op)];
}

AugmentPolicy parse_augment_policy(const std::string& name) {
  if (name == "trivial_augment_wide") return AugmentPolicy::kTrivialAugmentWide;
  if (name == "rand_augment") return AugmentPolicy::kRandAugment;
  if (name == "auto_augment_imagenet") return AugmentPolicy::kAutoAugmentImageNet;
  if (name == "auto_augment_cifar10") return AugmentPolicy::kAutoAugmentCifar10;
  if (name == "auto_augment_svhn") return AugmentPolicy::kAutoAugmentSvhn;
  throw ConfigError("argument \"policy\" must be one of trivial_augment_wide, rand_augment, auto_augment_imagenet, "
                    "auto_augment_cifar10, auto_augment_svhn; got \"" + name + "\"");
}

std::span<const AugmentOp> augment_space(AugmentPolicy policy) {
  if (policy == AugmentPolicy::kTrivialAugmentWide || policy == AugmentPolicy::kRandAugment) return kWideSpace;
  if (policy == AugmentPolicy::kAugMix) return kAugMixSpace;
  return {};
}

bool augment_has_magnitudes(AugmentOp op) {
  return op != O::kIdentity && op != O::kAutoContrast && op != O::kEqualize && op != O::kInvert;
}

bool augment_signed(AugmentOp op) {
  return augment_has_magnitudes(op) && op != O::kPosterize && op != O::kSolarize;
}

double augment_magnitude(AugmentPolicy policy, AugmentOp op, int64_t bin, int64_t num_bins, int64_t height,
                         int64_t width) {
  const bool wide = policy == AugmentPolicy::kTrivialAugmentWide, augmix = policy == AugmentPolicy::kAugMix;
  auto lin = [&](double end) { return static_cast<double>(kernels::torch_linspace(0.0f, static_cast<float>(end), num_bins, bin)); };
  // Translations: 32 px wide; 150/331 of the side (RandAugment, AutoAugment); a third (AugMix).
  auto side = [&](int64_t n) { return wide ? 32.0 : augmix ? static_cast<double>(n) / 3.0 : 150.0 / 331.0 * static_cast<double>(n); };
  switch (op) {
    case O::kShearX:
    case O::kShearY: return lin(wide ? 0.99 : 0.3);
    case O::kTranslateX: return lin(side(width));
    case O::kTranslateY: return lin(side(height));
    case O::kRotate: return lin(wide ? 135.0 : 30.0);
    case O::kBrightness:
    case O::kColor:
    case O::kContrast:
    case O::kSharpness: return lin(wide ? 0.99 : 0.9);
    case O::kPosterize: return posterize_bits(augmix ? 4 : 8, bin, num_bins, wide ? 6.0 : 4.0);
    case O::kSolarize: return kernels::torch_linspace(255.0f, 0.0f, num_bins, bin);
    default: return 0.0;
  }
}

std::span<const std::array<SubPolicyOp, 2>> auto_augment_sub_policies(AugmentPolicy policy) {
  switch (policy) {
    case AugmentPolicy::kAutoAugmentImageNet: return kImageNet;
    case AugmentPolicy::kAutoAugmentCifar10: return kCifar10;
    case AugmentPolicy::kAutoAugmentSvhn: return kSvhn;
    default: return {};
  }
}

std::vector<AugmentStep> draw_augment(const AugmentParams& p, int64_t height, int64_t width, RandomStream& rng) {
  std::vector<AugmentStep> steps;
  const auto space = augment_space(p.policy);
  if (p.policy == AugmentPolicy::kTrivialAugmentWide) {
    AugmentStep s{space[rng.below(space.size())], 0.0};
    if (augment_has_magnitudes(s.op)) {
      const auto bin = static_cast<int64_t>(rng.below(static_cast<uint64_t>(p.num_magnitude_bins)));
      s.magnitude = augment_magnitude(p.policy, s.op, bin, p.num_magnitude_bins, height, width);
    }
    if (augment_signed(s.op) && rng.below(2)) s.magnitude = -s.magnitude;
    steps.push_back(s);
  } else if (p.policy == AugmentPolicy::kRandAugment) {
    for (int i = 0; i < p.num_ops; ++i) {
      AugmentStep s{space[rng.below(space.size())], 0.0};
      if (augment_has_magnitudes(s.op))
        s.magnitude = augment_magnitude(p.policy, s.op, p.magnitude, p.num_magnitude_bins, height, width);
      if (augment_signed(s.op) && rng.below(2)) s.magnitude = -s.magnitude;
      steps.push_back(s);
    }
  } else {
    const auto policies = auto_augment_sub_policies(p.policy);
    const auto& sub = policies[rng.below(policies.size())];
    const float u[2] = {rng.uniform(), rng.uniform()};
    const bool negative[2] = {rng.below(2) == 0, rng.below(2) == 0};  // torchvision negates on sign 0
    for (int i = 0; i < 2; ++i) {
      if (!(u[i] <= sub[i].probability)) continue;
      AugmentStep s{sub[i].op, 0.0};
      if (sub[i].bin >= 0) s.magnitude = augment_magnitude(p.policy, s.op, sub[i].bin, 10, height, width);
      if (augment_signed(s.op) && negative[i]) s.magnitude = -s.magnitude;
      steps.push_back(s);
    }
  }
  return steps;
}

namespace {

// torchvision.transforms.functional as _apply_op calls it: each F.* call goes to the PIL kernel
// (apply_augment: AutoAugment, RandAugment, TrivialAugmentWide on PIL images) or to the tensor
// one (apply_augment_tensor: AugMix, which converts images to tensors first).
struct Functional {
  bool tensor = false;
  kernels::WarpFilter filter = kernels::WarpFilter::kNearest;
  std::span<const uint8_t> pil_fill;     // one value or one per channel (empty: 0)
  std::span<const double> tensor_fill;  // empty for None, else 1 value or one per channel

  // F.affine(img, angle=0, translate, scale=1, shear, center); `center` null: the image's centre.
  // F_t measures the centre from the middle of the image, PIL from its corner.
  Status affine(const ConstTensorView& src, const TensorView& dst, std::array<double, 2> translate,
                std::array<double, 2> shear, const std::array<double, 2>* center) const {
    const double w = static_cast<double>(src.shape[1]), h = static_cast<double>(src.shape[0]);
    if (tensor) {
      const std::array<double, 2> c = center ? std::array<double, 2>{(*center)[0] - w * 0.5, (*center)[1] - h * 0.5}
                                             : std::array<double, 2>{0.0, 0.0};
      return kernels::affine_grid_sample(src, dst, kernels::inverse_affine_matrix(c, 0.0, translate, 1.0, shear),
                                         filter, tensor_fill);
    }
    const std::array<double, 2> c = center ? *center : std::array<double, 2>{w * 0.5, h * 0.5};
    return kernels::affine_transform(src, dst, kernels::inverse_affine_matrix(c, 0.0, translate, 1.0, shear), filter,
                                     pil_fill);
  }

  // F.rotate(img, degrees): on a tensor the inverse matrix of -angle about the centre.
  Status rotate(const ConstTensorView& src, const TensorView& dst, double degrees) const {
    if (!tensor) return kernels::rotate(src, dst, degrees, filter, pil_fill);
    return kernels::affine_grid_sample(src, dst, kernels::inverse_affine_matrix({0.0, 0.0}, -degrees, {0.0, 0.0}, 1.0, {0.0, 0.0}),
                                       filter, tensor_fill);
  }

  using Adjust = Status (*)(const ConstTensorView&, const TensorView&, double);
  Adjust brightness() const { return tensor ? kernels::adjust_brightness : kernels::enhance_brightness; }
  Adjust saturation() const { return tensor ? kernels::adjust_saturation : kernels::enhance_color; }
  Adjust contrast() const { return tensor ? kernels::adjust_contrast : kernels::enhance_contrast; }
  Adjust sharpness() const { return tensor ? kernels::adjust_sharpness : kernels::enhance_sharpness; }
  Status autocontrast(const ConstTensorView& src, const TensorView& dst) const {
    return tensor ? kernels::autocontrast_tensor(src, dst) : kernels::autocontrast(src, dst);
  }
};

// torchvision's _apply_op: the one switch over the ops, for both paths.
Status apply_op(const AugmentStep& step, const ConstTensorView& src, const TensorView& dst, const Functional& f) {
  const double m = step.magnitude;
  switch (step.op) {
    case O::kIdentity: copy(src, dst); return Status::ok();
    case O::kShearX:
    case O::kShearY: {
      // F.affine(shear=[degrees(atan(m)), 0] or [0, degrees(atan(m))], center=[0, 0]).
      const double deg = std::atan(m) * kRadToDeg;
      const std::array<double, 2> shear = step.op == O::kShearX ? std::array<double, 2>{deg, 0.0}
                                                                : std::array<double, 2>{0.0, deg};
      const std::array<double, 2> corner{0.0, 0.0};
      return f.affine(src, dst, {0.0, 0.0}, shear, &corner);
    }
    case O::kTranslateX:
    case O::kTranslateY: {
      // F.affine(translate=[int(m), 0] or [0, int(m)]) about the image's centre.
      const double t = std::trunc(m);
      const std::array<double, 2> tr = step.op == O::kTranslateX ? std::array<double, 2>{t, 0.0} : std::array<double, 2>{0.0, t};
      return f.affine(src, dst, tr, {0.0, 0.0}, nullptr);
    }
    case O::kRotate: return f.rotate(src, dst, m);
    case O::kBrightness: return f.brightness()(src, dst, 1.0 + m);
    case O::kColor: return f.saturation()(src, dst, 1.0 + m);
    case O::kContrast: return f.contrast()(src, dst, 1.0 + m);
    case O::kSharpness: return f.sharpness()(src, dst, 1.0 + m);
    case O::kPosterize: return kernels::posterize(src, dst, static_cast<int>(m));
    case O::kSolarize: return kernels::solarize(src, dst, m);
    case O::kAutoContrast: return f.autocontrast(src, dst);
    case O::kEqualize: return kernels::equalize(src, dst);
    case O::kInvert: return kernels::invert(src, dst);
  }
  return Status::internal("unknown augment op");
}

}  // namespace

Status apply_augment(const AugmentStep& step, const ConstTensorView& src, const TensorView& dst,
                     kernels::WarpFilter filter, std::span<const uint8_t> fill) {
  return apply_op(step, src, dst, Functional{.tensor = false, .filter = filter, .pil_fill = fill});
}

Status apply_augment_tensor(const AugmentStep& step, const ConstTensorView& src, const TensorView& dst,
                            kernels::WarpFilter filter, std::span<const double> fill) {
  return apply_op(step, src, dst, Functional{.tensor = true, .filter = filter, .tensor_fill = fill});
}

}  // namespace hdl
