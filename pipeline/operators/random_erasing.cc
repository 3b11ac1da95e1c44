// random_erasing: torchvision RandomErasing on float32 image tensors (after ToTensor/Normalize).
#include <cmath>
#include <vector>

#include "pipeline/kernels/erase.h"
#include "pipeline/operators/decode_geometry.h"
#include "pipeline/operators/op_util.h"
#include "pipeline/registry.h"
#include "pipeline/spec.h"

namespace hdl {
namespace {

struct ErasingState final : OpState {
  std::vector<float> patch;  // the random values of one rectangle
};

// [lo, hi] of a range argument, checked as torch would fail (uniform_ needs lo <= hi).
std::pair<double, double> range_arg(const NodeSpec& n, const char* arg, bool positive) {
  const auto& v = n.get_floats(arg);
  const bool ok = v[0] <= v[1] && (positive ? v[0] > 0 : (v[0] >= 0 && v[1] <= 1));
  if (!ok)
    throw ConfigError("argument \"" + std::string(arg) + "\" must be [low, high] with " +
                      (positive ? "0 < low <= high" : "0 <= low <= high <= 1") + ", got " + ArgValue(v).to_string());
  return {v[0], v[1]};
}

class RandomErasingOp final : public Operator {
 public:
  explicit RandomErasingOp(const NodeSpec& n)
      : probability_(n.get_float("probability")), random_(n.get_bool("random_values")) {
    std::tie(params_.scale_lo, params_.scale_hi) = range_arg(n, "scale", false);
    std::tie(params_.ratio_lo, params_.ratio_hi) = range_arg(n, "ratio", true);
    for (double v : n.get_floats("value")) values_.push_back(static_cast<float>(v));
  }

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    const TensorSpec& s = in[0];
    if (s.shape.ndim() != 3 || (s.layout != Layout::kCHW && s.layout != Layout::kHWC) || s.dtype != DType::kF32)
      throw ConfigError("input must be CHW or HWC float32 images (e.g. crop_mirror_normalize's output), got " +
                        std::string(dtype_name(s.dtype)) + " " + layout_name(s.layout) + " " + s.shape.to_string());
    const int64_t c = s.shape[s.layout == Layout::kCHW ? 0 : 2];
    if (!random_ && c >= 0 && values_.size() != 1 && static_cast<int64_t>(values_.size()) != c)
      throw ConfigError("argument \"value\" has " + std::to_string(values_.size()) + " values for " +
                        std::to_string(c) + " channels (1 or " + std::to_string(c) + ")");
    return {s};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, in.shape, DType::kF32, in.layout));
    copy(in, out);
    // torchvision's order: `torch.rand(1) < p`, then get_params' draws.
    HDL_ASSIGN_OR_RETURN(const bool apply, ops::apply_draw(io, probability_));
    if (!apply) return Status::ok();
    const int axis = in.layout == Layout::kCHW ? 0 : 2;
    const SizeHW size{in.shape[axis == 0 ? 1 : 0], in.shape[axis == 0 ? 2 : 1]};
    StreamDraws draws(io.rng());
    const std::optional<CropWindow> win = random_erasing_window(size, params_, draws);
    if (!win) return Status::ok();  // no attempt fitted: the image unchanged
    const kernels::EraseRect rect{win->top, win->left, win->height, win->width};
    if (!random_) return kernels::erase(out, rect, values_, axis);
    std::vector<float>& patch = static_cast<ErasingState*>(io.state())->patch;
    patch.resize(static_cast<size_t>(in.shape[axis] * rect.height * rect.width));
    io.rng().normal_fill(patch.data(), patch.size());
    return kernels::erase_patch(out, rect, patch, axis);
  }

  std::unique_ptr<OpState> make_state() const override { return std::make_unique<ErasingState>(); }

 private:
  double probability_;
  bool random_;
  RandomErasingParams params_;
  std::vector<float> values_;
};

}  // namespace

OpSchema random_erasing_schema() {
  OpSchema s;
  s.name = "random_erasing";
  s.doc = "torchvision RandomErasing on float32 CHW (or HWC) images: with `probability`, up to 10 "
          "times draw an area fraction in `scale` and a log-uniform aspect ratio (h / w) in "
          "`ratio`; the first rectangle that fits strictly inside the image, at a uniform "
          "position, is set to `value` (or to standard normal values with random_values); "
          "when none fits the image is unchanged.";
  s.inputs = {{"images", "CHW or HWC float32 (e.g. crop_mirror_normalize's output)"}};
  s.outputs = {{"images", "same shape, layout and dtype"}};
  s.uses_randomness = true;
  s.args = {
      ops::probability_arg(0.5),
      {"scale", ArgType::kFloats, ArgValue({0.02, 0.33}), "[low, high] erased fraction of the area, within [0, 1]", list_size({2})},
      {"ratio", ArgType::kFloats, ArgValue({0.3, 3.3}), "[low, high] aspect ratio h / w, drawn log-uniformly (> 0)", list_size({2})},
      {"value", ArgType::kFloats, ArgValue({0.0}), "erasing value: one for all channels, or one per channel", list_size({1, 2, 3, 4})},
      {"random_values", ArgType::kBool, ArgValue(false), "erase with per-element standard normal values (torchvision value=\"random\"); value is ignored"},
  };
  s.create = [](const NodeSpec& n) { return std::make_unique<RandomErasingOp>(n); };
  return s;
}

}  // namespace hdl
