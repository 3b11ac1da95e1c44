// timm_augment: timm's RandAugment, AutoAugment and AugMixAugment on PIL images, natively (draws
// and ops in timm_augment_policy.h).
#include <cmath>
#include <cstdint>
#include <vector>

#include "pipeline/kernels/augment.h"
#include "pipeline/operators/op_util.h"
#include "pipeline/operators/timm_augment_policy.h"
#include "pipeline/registry.h"
#include "pipeline/spec.h"

namespace hdl {
namespace {

// Two scratch images per thread (the steps ping-pong between them and end in the output) and
// the blur's line buffers.
struct TimmAugmentState final : OpState {
  std::vector<uint8_t> scratch[2];
  kernels::PilBlurWorkspace blur;
  std::vector<uint8_t> chain;  // augmix: one chain's image, then the clipped mix
  std::vector<float> mix;      // augmix: the weighted sum of the chains
};

kernels::WarpFilter parse_filter(const std::string& name) {
  if (name == "nearest") return kernels::WarpFilter::kNearest;
  if (name == "bilinear") return kernels::WarpFilter::kBilinear;
  if (name == "bicubic") return kernels::WarpFilter::kBicubic;
  throw ConfigError("argument \"interpolation\": each filter must be \"nearest\", \"bilinear\" or \"bicubic\", got \"" +
                    name + "\"");
}

class TimmAugmentOp final : public Operator {
 public:
  explicit TimmAugmentOp(const NodeSpec& n) {
    const std::string& policy = n.get_string("policy");
    p_.policy = policy == "auto_augment" ? TimmAugmentParams::Policy::kAutoAugment
                : policy == "augmix"     ? TimmAugmentParams::Policy::kAugMix
                                         : TimmAugmentParams::Policy::kRandAugment;
    p_.width = static_cast<int>(n.get_int("width"));
    p_.depth = static_cast<int>(n.get_int("depth"));
    p_.alpha = n.get_float("alpha");
    for (const std::string& name : n.get_strings("ops")) p_.ops.push_back(parse_timm_op(name));
    p_.probabilities = n.get_floats("probabilities");
    p_.magnitudes = n.get_floats("magnitudes");
    for (int64_t g : n.get_ints("groups")) p_.groups.push_back(static_cast<int>(g));
    p_.num_layers = static_cast<int>(n.get_int("num_layers"));
    p_.weights = n.get_floats("weights");
    p_.magnitude_std = n.get_float("magnitude_std");
    p_.magnitude_uniform = n.get_bool("magnitude_uniform");
    p_.magnitude_max = n.get_float("magnitude_max");
    p_.translate_pct = n.get_float("translate_pct");
    p_.translate_const = n.get_float("translate_const");
    p_.filters.clear();
    for (const std::string& f : n.get_strings("interpolation")) p_.filters.push_back(parse_filter(f));
    validate(p_);
    fill_ = ops::pil_fill_arg(n);
  }

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    return {ops::pil_image_output(in[0], fill_)};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    if (p_.policy == TimmAugmentParams::Policy::kAugMix) return run_augmix(io, in);
    const std::vector<TimmStep> steps = draw_timm_augment(p_, in.shape[0], in.shape[1], io.rng());
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, in.shape, DType::kU8, Layout::kHWC));
    auto& state = *static_cast<TimmAugmentState*>(io.state());
    return ops::apply_steps(in, out, steps.size(), state.scratch,
                            [&](size_t i, const ConstTensorView& src, const TensorView& dst) {
                              return apply_timm_step(steps[i], src, dst, fill_, state.blur);
                            });
  }

  std::unique_ptr<OpState> make_state() const override { return std::make_unique<TimmAugmentState>(); }

 private:
  // AugMixAugment._apply_basic: each chain applied to the image, the chains summed with their
  // weights in float32 (numpy's mixed += w * chain), clipped to [0, 255] and truncated to uint8,
  // then Image.blend(image, mix, m).
  Status run_augmix(SampleIO& io, const ConstTensorView& in) const {
    const TimmAugMixDraw d = draw_timm_augmix(p_, in.shape[0], in.shape[1], io.rng());
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, in.shape, DType::kU8, Layout::kHWC));
    auto& state = *static_cast<TimmAugmentState*>(io.state());
    const size_t n = static_cast<size_t>(in.num_elements());
    state.mix.assign(n, 0.0f);
    state.chain.resize(n);
    const TensorView chain(state.chain.data(), in.shape, DType::kU8, Layout::kHWC);
    for (size_t c = 0; c < d.chains.size(); ++c) {
      const std::vector<TimmStep>& steps = d.chains[c];
      HDL_RETURN_IF_ERROR(ops::apply_steps(in, chain, steps.size(), state.scratch,
                                           [&](size_t i, const ConstTensorView& src, const TensorView& dst) {
                                             return apply_timm_step(steps[i], src, dst, fill_, state.blur);
                                           }));
      const float w = d.weights[c];
      for (size_t j = 0; j < n; ++j) state.mix[j] += w * static_cast<float>(state.chain[j]);
    }
    for (size_t j = 0; j < n; ++j) {
      const float v = state.mix[j];
      state.chain[j] = static_cast<uint8_t>(v <= 0.0f ? 0.0f : v >= 255.0f ? 255.0f : v);
    }
    return kernels::blend_images(in, chain, out, d.blend);
  }

  TimmAugmentParams p_;
  std::vector<uint8_t> fill_;
};

}  // namespace

OpSchema timm_augment_schema() {
  OpSchema s;
  s.name = "timm_augment";
  s.doc = "timm's RandAugment, AutoAugment and AugMixAugment (timm.data.auto_augment: what "
          "create_transform(auto_augment='rand-m9-mstd0.5-inc1', 'original', 'augmix-m5-w4-d2', ...) builds) on HWC "
          "uint8 images (1 or 3 channels), with "
          "Pillow's pixels, as timm applies them to PIL images. Each op (timm's names: AutoContrast, Equalize, "
          "Invert, Rotate, Posterize[Increasing|Original], Solarize[Increasing], SolarizeAdd, Color, Contrast, "
          "Brightness, Sharpness (and their Increasing forms), ShearX/Y, TranslateX/Y[Rel], Desaturate, "
          "GaussianBlur[Rand]) is applied when random() <= its probability, at its magnitude plus Gaussian "
          "noise (magnitude_std) or uniformly in [0, magnitude] (magnitude_uniform), clamped to [0, "
          "magnitude_max or 10], through timm's level functions; signed levels get a fair sign, geometric ops "
          "a random filter among `interpolation`. rand_augment draws num_layers ops per image (uniformly with "
          "replacement, or by `weights` without); auto_augment draws one sub-policy (`groups`); augmix draws "
          "Dirichlet(alpha) weights for `width` chains of `depth` ops (uniform, with replacement; depth <= 0: 1 to "
          "3 per chain), sums the chains with the weights in float32, clips and truncates the sum, and blends the "
          "image with it by a Beta(alpha, alpha) factor (Pillow's Image.blend).";
  s.inputs = {{"images", "HWC uint8, 1 or 3 channels"}};
  s.outputs = {{"images", "same shape"}};
  s.uses_randomness = true;
  s.args = {
      {"policy", ArgType::kString, ArgValue("rand_augment"), "how ops are drawn",
       one_of({"rand_augment", "auto_augment", "augmix"})},
      {"ops", ArgType::kStrings, std::nullopt, "timm's op names, in order (auto_augment: sub-policies back to back)"},
      {"probabilities", ArgType::kFloats, std::nullopt, "per op: the probability it applies", in_range(0, 1)},
      {"magnitudes", ArgType::kFloats, std::nullopt, "per op: its magnitude (level) before noise", in_range(-1e6, 1e6)},
      {"groups", ArgType::kInts, ArgValue(std::vector<int64_t>{}),
       "auto_augment: the number of ops of each sub-policy", in_range(1, 64)},
      {"num_layers", ArgType::kInt, ArgValue(2), "rand_augment: ops drawn per image", in_range(0, 64)},
      {"width", ArgType::kInt, ArgValue(3), "augmix: chains mixed", in_range(1, 64)},
      {"depth", ArgType::kInt, ArgValue(-1), "augmix: ops per chain; <= 0: 1 to 3, drawn per chain", in_range(-1, 64)},
      {"alpha", ArgType::kFloat, ArgValue(1.0), "augmix: Dirichlet and Beta concentration", in_range(1e-3, 1e6)},
      {"weights", ArgType::kFloats, ArgValue(std::vector<double>{}),
       "rand_augment: [] draws ops uniformly with replacement; else one weight per op, drawn without "
       "replacement",
       at_least(0)},
      {"magnitude_std", ArgType::kFloat, ArgValue(0.0), "std of Gaussian noise added to the magnitude",
       in_range(0, 1e6)},
      {"magnitude_uniform", ArgType::kBool, ArgValue(false),
       "draw the magnitude uniformly in [0, magnitude] (timm's mstd above 100 or inf)"},
      {"magnitude_max", ArgType::kFloat, ArgValue(0.0), "upper clamp of the level (0: 10, timm's default)",
       in_range(0, 1e6)},
      {"translate_pct", ArgType::kFloat, ArgValue(0.45), "TranslateXRel/YRel: fraction of the size at level 10",
       in_range(-1e6, 1e6)},
      {"translate_const", ArgType::kFloat, ArgValue(250.0), "TranslateX/Y: pixels at level 10", in_range(-1e6, 1e6)},
      {"interpolation", ArgType::kStrings, ArgValue(std::vector<std::string>{"bicubic"}),
       "geometric ops' Pillow filter, or several to choose from per op (timm's default: bilinear and bicubic)",
       list_size({1, 2, 3})},
      {"fill", ArgType::kFloats, ArgValue(std::vector<double>{128.0, 128.0, 128.0}),
       "colour outside the image after geometric ops (timm's img_mean): [v] or one per channel",
       all_of({list_size({1, 3}), in_range(0, 255)})},
  };
  s.create = [](const NodeSpec& n) { return std::make_unique<TimmAugmentOp>(n); };
  return s;
}

}  // namespace hdl
