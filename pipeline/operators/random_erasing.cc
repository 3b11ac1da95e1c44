// random_erasing: torchvision RandomErasing on float32 image tensors (after ToTensor/Normalize),
// and timm's RandomErasing (several rectangles, a random count, a random colour per channel).
#include <cmath>
#include <vector>

#include "pipeline/decode/crop_geometry.h"
#include "pipeline/kernels/erase.h"
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
      : probability_(n.get_float("probability")), random_(n.get_bool("random_values")),
        random_color_(n.get_bool("random_color")) {
    std::tie(params_.scale_lo, params_.scale_hi) = range_arg(n, "scale", false);
    std::tie(params_.ratio_lo, params_.ratio_hi) = range_arg(n, "ratio", true);
    for (double v : n.get_floats("value")) values_.push_back(static_cast<float>(v));
    const auto& count = n.get_ints("count");
    if (count[0] < 0 || count[0] > count[1])
      throw ConfigError("argument \"count\" must be [low, high] with 0 <= low <= high, got " + ArgValue(count).to_string());
    count_lo_ = count[0], count_hi_ = count[1];
    if (random_ && random_color_)
      throw ConfigError("arguments \"random_values\" and \"random_color\" exclude each other");
  }

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    const TensorSpec& s = in[0];
    if (s.shape.ndim() != 3 || (s.layout != Layout::kCHW && s.layout != Layout::kHWC) || s.dtype != DType::kF32)
      throw ConfigError("input must be CHW or HWC float32 images (e.g. crop_mirror_normalize's output), got " +
                        std::string(dtype_name(s.dtype)) + " " + layout_name(s.layout) + " " + s.shape.to_string());
    const int64_t c = s.shape[s.layout == Layout::kCHW ? 0 : 2];
    if (!random_ && !random_color_ && c >= 0 && values_.size() != 1 && static_cast<int64_t>(values_.size()) != c)
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
    // timm's order: the count (when it is a range), then per rectangle its window's draws (the
    // area fraction divided by the count) and its values.
    const int64_t count = count_lo_ == count_hi_ ? count_lo_ : count_lo_ + static_cast<int64_t>(io.rng().below(
                                                                  static_cast<uint64_t>(count_hi_ - count_lo_ + 1)));
    RandomErasingParams params = params_;
    if (count > 1) params.scale_lo /= static_cast<double>(count), params.scale_hi /= static_cast<double>(count);
    const int axis = in.layout == Layout::kCHW ? 0 : 2;
    const SizeHW size{in.shape[axis == 0 ? 1 : 0], in.shape[axis == 0 ? 2 : 1]};
    for (int64_t k = 0; k < count; ++k) {
      StreamDraws draws(io.rng());
      const std::optional<CropWindow> win = random_erasing_window(size, params, draws);
      if (!win) continue;  // no attempt fitted: this rectangle erases nothing
      HDL_RETURN_IF_ERROR(erase(io, out, {win->top, win->left, win->height, win->width}, axis));
    }
    return Status::ok();
  }

  std::unique_ptr<OpState> make_state() const override { return std::make_unique<ErasingState>(); }

 private:
  // One rectangle set to the constant values, per-element normal values, or one normal value
  // per channel.
  Status erase(SampleIO& io, const TensorView& out, const kernels::EraseRect& rect, int axis) const {
    if (random_color_) {
      std::vector<float>& colour = static_cast<ErasingState*>(io.state())->patch;
      colour.resize(static_cast<size_t>(out.shape[axis]));
      io.rng().normal_fill(colour.data(), colour.size());
      return kernels::erase(out, rect, colour, axis);
    }
    if (!random_) return kernels::erase(out, rect, values_, axis);
    std::vector<float>& patch = static_cast<ErasingState*>(io.state())->patch;
    patch.resize(static_cast<size_t>(out.shape[axis] * rect.height * rect.width));
    io.rng().normal_fill(patch.data(), patch.size());
    return kernels::erase_patch(out, rect, patch, axis);
  }

  double probability_;
  bool random_, random_color_;
  int64_t count_lo_ = 1, count_hi_ = 1;
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
          "position, is set to `value` (or to standard normal values with random_values, or to "
          "one standard normal value per channel with random_color); when none fits the image "
          "is unchanged. timm's RandomErasing: `count` rectangles (a uniform integer in [low, "
          "high] per image), each drawn so with the area fraction divided by the count.";
  s.inputs = {{"images", "CHW or HWC float32 (e.g. crop_mirror_normalize's output)"}};
  s.outputs = {{"images", "same shape, layout and dtype"}};
  s.uses_randomness = true;
  s.args = {
      ops::probability_arg(0.5),
      {"scale", ArgType::kFloats, ArgValue({0.02, 0.33}), "[low, high] erased fraction of the area, within [0, 1]", list_size({2})},
      {"ratio", ArgType::kFloats, ArgValue({0.3, 3.3}), "[low, high] aspect ratio h / w, drawn log-uniformly (> 0)", list_size({2})},
      {"value", ArgType::kFloats, ArgValue({0.0}), "erasing value: one for all channels, or one per channel", list_size({1, 2, 3, 4})},
      {"random_values", ArgType::kBool, ArgValue(false), "erase with per-element standard normal values (torchvision value=\"random\", timm mode 'pixel'); value is ignored"},
      {"random_color", ArgType::kBool, ArgValue(false), "erase each rectangle with one standard normal value per channel (timm mode 'rand'); value is ignored"},
      {"count", ArgType::kInts, ArgValue(std::vector<int64_t>{1, 1}), "[low, high]: rectangles per erased image, uniform in the range (timm's min_count, max_count), each with the area fraction divided by the count", list_size({2})},
  };
  s.create = [](const NodeSpec& n) { return std::make_unique<RandomErasingOp>(n); };
  return s;
}

}  // namespace hdl
