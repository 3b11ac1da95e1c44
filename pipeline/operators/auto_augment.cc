// auto_augment: torchvision's AutoAugment, RandAugment and TrivialAugmentWide on PIL images,
// natively (draws and ops in auto_augment_policy.h).
#include <cmath>
#include <cstdint>
#include <vector>

#include "pipeline/operators/auto_augment_policy.h"
#include "pipeline/operators/op_util.h"
#include "pipeline/registry.h"
#include "pipeline/spec.h"

namespace hdl {
namespace {

// Two scratch images per thread: the steps of a sample ping-pong between them and end in the
// output (geometric ops cannot work in place).
struct AutoAugmentState final : OpState {
  std::vector<uint8_t> scratch[2];
};

class AutoAugmentOp final : public Operator {
 public:
  explicit AutoAugmentOp(const NodeSpec& n) {
    params_.policy = parse_augment_policy(n.get_string("policy"));
    params_.num_ops = static_cast<int>(n.get_int("num_ops"));
    params_.magnitude = static_cast<int>(n.get_int("magnitude"));
    params_.num_magnitude_bins = static_cast<int>(n.get_int("num_magnitude_bins"));
    if (params_.policy == AugmentPolicy::kRandAugment && params_.magnitude >= params_.num_magnitude_bins)
      throw ConfigError("argument \"magnitude\" must be below num_magnitude_bins (" +
                        std::to_string(params_.num_magnitude_bins) + "), got " + std::to_string(params_.magnitude));
    const std::string& interp = n.get_string("interpolation");
    filter_ = interp == "bilinear"  ? kernels::WarpFilter::kBilinear
              : interp == "bicubic" ? kernels::WarpFilter::kBicubic
                                    : kernels::WarpFilter::kNearest;
    fill_ = ops::pil_fill_arg(n);
  }

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    return {ops::pil_image_output(in[0], fill_)};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    const std::vector<AugmentStep> steps = draw_augment(params_, in.shape[0], in.shape[1], io.rng());
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, in.shape, DType::kU8, Layout::kHWC));
    auto& state = *static_cast<AutoAugmentState*>(io.state());
    return ops::apply_steps(in, out, steps.size(), state.scratch,
                            [&](size_t i, const ConstTensorView& src, const TensorView& dst) {
                              return apply_augment(steps[i], src, dst, filter_, fill_);
                            });
  }

  std::unique_ptr<OpState> make_state() const override { return std::make_unique<AutoAugmentState>(); }

 private:
  AugmentParams params_;
  kernels::WarpFilter filter_ = kernels::WarpFilter::kNearest;
  std::vector<uint8_t> fill_;
};

}  // namespace

OpSchema auto_augment_schema() {
  OpSchema s;
  s.name = "auto_augment";
  s.doc = "torchvision's automatic augmentation policies on HWC uint8 images (1 or 3 channels), with "
          "Pillow's pixels (what torchvision does to a PIL image): TrivialAugmentWide (one op, random "
          "magnitude bin), RandAugment (num_ops ops at bin `magnitude`), AutoAugment (a random "
          "ImageNet/CIFAR10/SVHN sub-policy, each op applied with its probability). Ops: Identity, "
          "ShearX/Y, TranslateX/Y, Rotate, Brightness, Color, Contrast, Sharpness, Posterize, "
          "Solarize, AutoContrast, Equalize (and Invert in AutoAugment); signed magnitudes get a "
          "random sign.";
  s.inputs = {{"images", "HWC uint8, 1 or 3 channels"}};
  s.outputs = {{"images", "same shape"}};
  s.uses_randomness = true;
  s.args = {
      {"policy", ArgType::kString, ArgValue("trivial_augment_wide"), "which policy",
       one_of({"trivial_augment_wide", "rand_augment", "auto_augment_imagenet", "auto_augment_cifar10",
               "auto_augment_svhn"})},
      {"num_ops", ArgType::kInt, ArgValue(2), "rand_augment: ops per sample", in_range(0, 64)},
      {"magnitude", ArgType::kInt, ArgValue(9), "rand_augment: magnitude bin (< num_magnitude_bins)",
       at_least(0)},
      {"num_magnitude_bins", ArgType::kInt, ArgValue(31),
       "rand_augment, trivial_augment_wide: bins of the magnitude tables", in_range(2, 1 << 20)},
      {"interpolation", ArgType::kString, ArgValue("nearest"), "geometric ops' resampling (Pillow's)",
       one_of({"nearest", "bilinear", "bicubic"})},
      {"fill", ArgType::kFloats, ArgValue(std::vector<double>{}),
       "colour outside the image after geometric ops: [] (0), [v] or one per channel; int() of each",
       all_of({list_size({0, 1, 3}), in_range(0, 255)})},
  };
  s.create = [](const NodeSpec& n) { return std::make_unique<AutoAugmentOp>(n); };
  return s;
}

}  // namespace hdl
