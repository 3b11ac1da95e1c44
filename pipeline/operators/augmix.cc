// augmix: torchvision's AugMix natively (draws and ops in augmix_policy.h).
#include <cstdint>
#include <vector>

#include "pipeline/operators/augmix_policy.h"
#include "pipeline/operators/op_util.h"
#include "pipeline/registry.h"
#include "pipeline/spec.h"

namespace hdl {
namespace {

// Per thread: the float32 mix and two chain images to ping-pong between.
struct AugMixState final : OpState {
  std::vector<float> mix;
  std::vector<uint8_t> scratch[2];
};

class AugMixOp final : public Operator {
 public:
  explicit AugMixOp(const NodeSpec& n) {
    params_.severity = static_cast<int>(n.get_int("severity"));
    params_.mixture_width = static_cast<int>(n.get_int("mixture_width"));
    params_.chain_depth = static_cast<int>(n.get_int("chain_depth"));
    params_.alpha = n.get_float("alpha");
    params_.all_ops = n.get_bool("all_ops");
    filter_ = n.get_string("interpolation") == "nearest" ? kernels::WarpFilter::kNearest : kernels::WarpFilter::kBilinear;
    fill_ = n.get_floats("fill");
  }

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    ops::require_hwc(in[0], {DType::kU8}, {1, 3});
    ops::check_fill(fill_, ops::dim(in[0], 2));
    return {in[0]};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    const AugMixDraw draw = draw_augmix(params_, in.shape[0], in.shape[1], io.rng());
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, in.shape, DType::kU8, Layout::kHWC));
    auto& st = *static_cast<AugMixState*>(io.state());
    st.mix.resize(static_cast<size_t>(in.num_elements()));
    augmix_accumulate(in, draw.original_weight, st.mix, true);
    for (size_t i = 0; i < draw.chains.size(); ++i) {
      ConstTensorView cur = in;
      for (size_t k = 0; k < draw.chains[i].size(); ++k) {
        std::vector<uint8_t>& buf = st.scratch[k % 2];
        buf.resize(in.num_bytes());
        const TensorView dst(buf.data(), in.shape, DType::kU8, Layout::kHWC);
        HDL_RETURN_IF_ERROR(apply_augment_tensor(draw.chains[i][k], cur, dst, filter_, fill_));
        cur = dst;
      }
      augmix_accumulate(cur, draw.chain_weights[i], st.mix, false);
    }
    augmix_store(st.mix, out);
    return Status::ok();
  }

  std::unique_ptr<OpState> make_state() const override { return std::make_unique<AugMixState>(); }

 private:
  AugMixParams params_;
  kernels::WarpFilter filter_ = kernels::WarpFilter::kBilinear;
  std::vector<double> fill_;
};

}  // namespace

OpSchema augmix_schema() {
  OpSchema s;
  s.name = "augmix";
  s.doc = "torchvision's AugMix on HWC uint8 images (1 or 3 channels), with its tensor ops (AugMix converts "
          "PIL images to tensors): mixture_width chains of chain_depth ops (<= 0: 1 to 3 per chain) "
          "drawn from ShearX/Y, TranslateX/Y, Rotate, Posterize, Solarize, AutoContrast, Equalize "
          "(and Brightness, Color, Contrast, Sharpness with all_ops) at bins below severity, mixed "
          "with the image by Dirichlet(alpha) weights in float32 and truncated.";
  s.inputs = {{"images", "HWC uint8, 1 or 3 channels"}};
  s.outputs = {{"images", "same shape"}};
  s.uses_randomness = true;
  s.args = {
      {"severity", ArgType::kInt, ArgValue(3), "magnitude bins drawn from [0, severity) of 10", in_range(1, 10)},
      {"mixture_width", ArgType::kInt, ArgValue(3), "chains mixed", in_range(1, 64)},
      {"chain_depth", ArgType::kInt, ArgValue(-1), "ops per chain; <= 0: 1 to 3 at random", in_range(-1e9, 64)},
      {"alpha", ArgType::kFloat, ArgValue(1.0), "Dirichlet concentration", in_range(1e-3, 1e6)},
      {"all_ops", ArgType::kBool, ArgValue(true), "also Brightness, Color, Contrast, Sharpness"},
      {"interpolation", ArgType::kString, ArgValue("bilinear"), "geometric ops' sampling (torch's grid_sample)",
       one_of({"nearest", "bilinear"})},
      {"fill", ArgType::kFloats, ArgValue(std::vector<double>{}),
       "value outside the image after geometric ops: [] (None: 0, no mask), [v] or one per channel",
       all_of({list_size({0, 1, 3}), in_range(0, 255)})},
  };
  s.create = [](const NodeSpec& n) { return std::make_unique<AugMixOp>(n); };
  return s;
}

}  // namespace hdl
