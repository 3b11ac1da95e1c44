// pil_gaussian_blur: Pillow's ImageFilter.GaussianBlur with a per-sample random radius, applied
// with a probability: the blur of DINO / BYOL / MoCo v3 (their own PIL transform classes).
#include "pipeline/kernels/pil_blur.h"
#include "pipeline/operators/op_util.h"
#include "pipeline/registry.h"
#include "pipeline/spec.h"

namespace hdl {
namespace {

struct PilBlurState final : OpState {
  kernels::PilBlurWorkspace workspace;
};

class PilGaussianBlurOp final : public Operator {
 public:
  explicit PilGaussianBlurOp(const NodeSpec& n) : p_(n.get_float("probability")) {
    const auto& r = n.get_floats("radius");
    lo_ = r[0], hi_ = r.size() == 2 ? r[1] : r[0];
    if (!(lo_ >= 0 && lo_ <= hi_))
      throw ConfigError("argument \"radius\" must be [r] with r >= 0 or [min, max] with 0 <= min <= max, got " +
                        ArgValue(r).to_string());
  }

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    ops::require_hwc(in[0], {DType::kU8});
    return {in[0]};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, in.shape, in.dtype, Layout::kHWC));
    // The recipes' order: whether to blur, then the radius (Python's random.uniform, passed
    // to Pillow as a C float).
    HDL_ASSIGN_OR_RETURN(const bool apply, ops::apply_draw(io, p_));
    if (!apply) {
      copy(in, out);
      return Status::ok();
    }
    const auto radius = static_cast<float>(lo_ == hi_ ? lo_ : io.rng().uniform(lo_, hi_));
    return kernels::pil_gaussian_blur(in, out, radius, static_cast<PilBlurState*>(io.state())->workspace);
  }

  std::unique_ptr<OpState> make_state() const override { return std::make_unique<PilBlurState>(); }

 private:
  double p_;
  double lo_ = 0.1, hi_ = 2.0;
};

}  // namespace

OpSchema pil_gaussian_blur_schema() {
  OpSchema s;
  s.name = "pil_gaussian_blur";
  s.doc = "Pillow's ImageFilter.GaussianBlur(radius) on HWC uint8 images (1-4 channels), bit-exact: three "
          "extended box blurs per axis. With `probability` per sample (else the image unchanged), then a "
          "radius [r] fixed or [min, max] drawn uniformly per sample.";
  s.inputs = {{"images", "HWC uint8"}};
  s.outputs = {{"images", "same shape"}};
  s.uses_randomness = true;
  s.args = {
      {"radius", ArgType::kFloats, ArgValue({0.1, 2.0}), "[r] fixed, or [min, max] drawn uniformly per sample",
       list_size({1, 2})},
      ops::probability_arg(1.0),
  };
  s.create = [](const NodeSpec& n) { return std::make_unique<PilGaussianBlurOp>(n); };
  return s;
}

}  // namespace hdl
