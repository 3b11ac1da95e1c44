#include "pipeline/operators/augmix_policy.h"

#include <algorithm>
#include <cmath>

#include "pipeline/kernels/augment.h"
#include "pipeline/kernels/color.h"
#include "pipeline/kernels/tensor_augment.h"

namespace hdl {
namespace {

using O = AugmentOp;

// CPython's math.degrees constant (180.0 / Py_MATH_PI).
constexpr double kRadToDeg = 180.0 / 3.14159265358979323846;
// torchvision AugMix._PARAMETER_MAX: the tables have 10 bins.
constexpr int kBins = 10;

// A Dirichlet(alpha, ..., alpha) draw of n weights, as float32 like torch's.
std::vector<float> dirichlet(double alpha, int n, RandomStream& rng) {
  std::vector<float> out(static_cast<size_t>(n));
  rng.dirichlet(alpha, out);
  return out;
}

}  // namespace

AugMixDraw draw_augmix(const AugMixParams& p, int64_t height, int64_t width, RandomStream& rng) {
  AugMixDraw d;
  const std::vector<float> m = dirichlet(p.alpha, 2, rng);
  d.original_weight = m[0];
  d.chain_weights = dirichlet(p.alpha, p.mixture_width, rng);
  for (float& w : d.chain_weights) w *= m[1];
  auto space = augment_space(AugmentPolicy::kAugMix);
  if (!p.all_ops) space = space.first(9);
  for (int i = 0; i < p.mixture_width; ++i) {
    const int depth = p.chain_depth > 0 ? p.chain_depth : 1 + static_cast<int>(rng.below(3));
    std::vector<AugmentStep> chain;
    for (int k = 0; k < depth; ++k) {
      AugmentStep s{space[rng.below(space.size())], 0.0};
      if (augment_has_magnitudes(s.op)) {
        const auto bin = static_cast<int64_t>(rng.below(static_cast<uint64_t>(p.severity)));
        s.magnitude = augment_magnitude(AugmentPolicy::kAugMix, s.op, bin, kBins, height, width);
      }
      if (augment_signed(s.op) && rng.below(2)) s.magnitude = -s.magnitude;
      chain.push_back(s);
    }
    d.chains.push_back(std::move(chain));
  }
  return d;
}

Status apply_augment_tensor(const AugmentStep& step, const ConstTensorView& src, const TensorView& dst,
                            kernels::WarpFilter filter, std::span<const double> fill) {
  const double m = step.magnitude;
  const double w = static_cast<double>(src.shape[1]), h = static_cast<double>(src.shape[0]);
  switch (step.op) {
    case O::kIdentity: copy(src, dst); return Status::ok();
    case O::kShearX:
    case O::kShearY: {
      // F.affine(shear=..., center=[0, 0]): the tensor path measures the centre from the middle.
      const double deg = std::atan(m) * kRadToDeg;
      const std::array<double, 2> shear = step.op == O::kShearX ? std::array<double, 2>{deg, 0.0}
                                                                : std::array<double, 2>{0.0, deg};
      const auto matrix = kernels::inverse_affine_matrix({0.0 - w * 0.5, 0.0 - h * 0.5}, 0.0, {0.0, 0.0}, 1.0, shear);
      return kernels::affine_grid_sample(src, dst, matrix, filter, fill);
    }
    case O::kTranslateX:
    case O::kTranslateY: {
      const double t = std::trunc(m);
      const std::array<double, 2> tr = step.op == O::kTranslateX ? std::array<double, 2>{t, 0.0} : std::array<double, 2>{0.0, t};
      return kernels::affine_grid_sample(src, dst, kernels::inverse_affine_matrix({0.0, 0.0}, 0.0, tr, 1.0, {0.0, 0.0}),
                                         filter, fill);
    }
    case O::kRotate:  // F.rotate on a tensor: the inverse matrix of -angle about the centre
      return kernels::affine_grid_sample(src, dst, kernels::inverse_affine_matrix({0.0, 0.0}, -m, {0.0, 0.0}, 1.0, {0.0, 0.0}),
                                         filter, fill);
    case O::kBrightness: return kernels::adjust_brightness(src, dst, 1.0 + m);
    case O::kColor: return kernels::adjust_saturation(src, dst, 1.0 + m);
    case O::kContrast: return kernels::adjust_contrast(src, dst, 1.0 + m);
    case O::kSharpness: return kernels::adjust_sharpness(src, dst, 1.0 + m);
    case O::kPosterize: return kernels::posterize(src, dst, static_cast<int>(m));
    case O::kSolarize: return kernels::solarize(src, dst, m);
    case O::kAutoContrast: return kernels::autocontrast_tensor(src, dst);
    case O::kEqualize: return kernels::equalize(src, dst);
    case O::kInvert: return kernels::invert(src, dst);
  }
  return Status::internal("unknown augment op");
}

void augmix_accumulate(const ConstTensorView& image, float weight, std::span<float> mix, bool first) {
  const auto* p = static_cast<const uint8_t*>(image.data);
  size_t k = 0;
  for (int64_t y = 0; y < image.shape[0]; ++y) {
    for (int64_t x = 0; x < image.shape[1]; ++x) {
      for (int64_t c = 0; c < image.shape[2]; ++c, ++k) {
        const float v = weight * static_cast<float>(p[y * image.strides[0] + x * image.strides[1] + c * image.strides[2]]);
        mix[k] = first ? v : mix[k] + v;
      }
    }
  }
}

void augmix_store(std::span<const float> mix, const TensorView& dst) {
  auto* p = static_cast<uint8_t*>(dst.data);
  size_t k = 0;
  for (int64_t y = 0; y < dst.shape[0]; ++y) {
    for (int64_t x = 0; x < dst.shape[1]; ++x) {
      for (int64_t c = 0; c < dst.shape[2]; ++c, ++k) {
        // .to(uint8) truncates; the weights sum to about 1, so only rounding can pass 255.
        p[y * dst.strides[0] + x * dst.strides[1] + c * dst.strides[2]] = static_cast<uint8_t>(std::clamp(mix[k], 0.0f, 255.0f));
      }
    }
  }
}

}  // namespace hdl
