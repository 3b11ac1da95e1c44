// gaussian_blur: torchvision GaussianBlur (fixed or per-sample random sigma).
#include "pipeline/decode/crop_geometry.h"
#include "pipeline/kernels/blur.h"
#include "pipeline/operators/op_util.h"
#include "pipeline/registry.h"
#include "pipeline/spec.h"

namespace hdl {
namespace {

struct BlurState final : OpState {
  kernels::BlurWorkspace workspace;
};

class GaussianBlurOp final : public Operator {
 public:
  explicit GaussianBlurOp(const NodeSpec& n) : probability_(n.get_float("probability")) {
    const auto& k = n.get_ints("kernel_size");
    options_.kernel_x = static_cast<int>(k[0]);
    options_.kernel_y = static_cast<int>(k.size() == 2 ? k[1] : k[0]);
    const auto& s = n.get_floats("sigma");
    sigma_lo_ = s[0], sigma_hi_ = s.size() == 2 ? s[1] : s[0];
    if (!(sigma_lo_ > 0 && sigma_lo_ <= sigma_hi_))
      throw ConfigError("argument \"sigma\" must be [s] with s > 0 or [min, max] with 0 < min <= max, got " +
                        ArgValue(s).to_string());
  }

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    ops::require_hwc(in[0], {DType::kU8, DType::kF32});
    return {in[0]};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    HDL_ASSIGN_OR_RETURN(const bool apply, ops::apply_draw(io, probability_));
    if (!apply) {
      HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, in.shape, in.dtype, Layout::kHWC));
      copy(in, out);
      return Status::ok();
    }
    kernels::GaussianBlurOptions o = options_;
    // torchvision GaussianBlur.get_params: one float32 sigma per sample for both axes.
    StreamDraws draws(io.rng());
    o.sigma_x = o.sigma_y = sigma_lo_ == sigma_hi_ ? sigma_lo_ : draws.uniform(sigma_lo_, sigma_hi_);
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, in.shape, in.dtype, Layout::kHWC));
    return kernels::gaussian_blur(in, out, o, static_cast<BlurState*>(io.state())->workspace);
  }

  std::unique_ptr<OpState> make_state() const override { return std::make_unique<BlurState>(); }

 private:
  kernels::GaussianBlurOptions options_;
  double sigma_lo_ = 0.1, sigma_hi_ = 2.0;
  double probability_;
};

}  // namespace

OpSchema gaussian_blur_schema() {
  OpSchema s;
  s.name = "gaussian_blur";
  s.doc = "torchvision GaussianBlur on HWC uint8/float32 images: kernel_size [k] or [kx, ky] (odd), "
          "sigma [s] fixed or [min, max] drawn per sample (float32, one sigma for both axes); "
          "reflect padding; applied with `probability` (RandomApply; a skipped sample is copied).";
  s.inputs = {{"images", "HWC uint8 or float32"}};
  s.outputs = {{"images", "same shape and dtype"}};
  s.uses_randomness = true;
  s.args = {
      {"kernel_size", ArgType::kInts, std::nullopt, "[k] or [kx, ky], odd and positive", all_of({list_size({1, 2}), ops::odd_positive()})},
      {"sigma", ArgType::kFloats, ArgValue({0.1, 2.0}), "[s] fixed, or [min, max] drawn uniformly per sample", list_size({1, 2})},
      ops::probability_arg(1.0),
  };
  s.create = [](const NodeSpec& n) { return std::make_unique<GaussianBlurOp>(n); };
  return s;
}

}  // namespace hdl
