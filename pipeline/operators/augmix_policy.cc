#include "pipeline/operators/augmix_policy.h"

#include <algorithm>

namespace hdl {
namespace {

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
