// color_jitter: torchvision ColorJitter (random order, random factors) on HWC uint8 images.
//
// Also on the gpu stage (run_batch: the device twins of the four adjustments, per sample), with
// each sample's draws made by the same member function as on the cpu stage.
#include "pipeline/operators/color_jitter.h"

#include <cmath>
#include <limits>

#include "pipeline/decode/crop_geometry.h"
#include "pipeline/kernels/color.h"
#include "pipeline/kernels/cuda/color.h"
#include "pipeline/kernels/cuda/geometry.h"
#include "pipeline/operators/op_util.h"
#include "pipeline/registry.h"
#include "pipeline/spec.h"

namespace hdl {

std::optional<std::pair<double, double>> parse_jitter_range(const char* arg, const std::vector<double>& v,
                                                            bool is_hue) {
  if (v.empty()) return std::nullopt;
  const double center = is_hue ? 0.0 : 1.0;
  const double lo_bound = is_hue ? -0.5 : 0.0;
  const double hi_bound = is_hue ? 0.5 : std::numeric_limits<double>::infinity();
  std::pair<double, double> r;
  if (v.size() == 1) {
    if (!(v[0] >= 0) || (is_hue && v[0] > 0.5))
      throw ConfigError("argument \"" + std::string(arg) + "\" must be in [0, " + (is_hue ? "0.5" : "inf") +
                        "], got " + ArgValue(v).to_string());
    r = {center - v[0], center + v[0]};
    if (!is_hue) r.first = std::max(r.first, 0.0);
  } else {
    if (!(lo_bound <= v[0] && v[0] <= v[1] && v[1] <= hi_bound))
      throw ConfigError("argument \"" + std::string(arg) + "\" must be [low, high] with " +
                        (is_hue ? "-0.5 <= low <= high <= 0.5" : "0 <= low <= high") + ", got " +
                        ArgValue(v).to_string());
    r = {v[0], v[1]};
  }
  if (r.first == center && r.second == center) return std::nullopt;
  return r;
}

ColorJitterDraw draw_color_jitter(const ColorJitterRanges& ranges, RandomStream& rng) {
  ColorJitterDraw d;
  for (int i = 3; i > 0; --i) std::swap(d.order[i], d.order[rng.below(static_cast<uint64_t>(i + 1))]);
  StreamDraws draws(rng);
  for (int k = 0; k < 4; ++k) {
    if (ranges.range[k]) d.factor[k] = draws.uniform(ranges.range[k]->first, ranges.range[k]->second);
  }
  return d;
}

Status apply_color_jitter(const ColorJitterDraw& draw, const ConstTensorView& src, const TensorView& dst) {
  using Fn = Status (*)(const ConstTensorView&, const TensorView&, double);
  static constexpr Fn kFns[4] = {kernels::adjust_brightness, kernels::adjust_contrast,
                                 kernels::adjust_saturation, kernels::adjust_hue};
  bool first = true;
  for (int k : draw.order) {
    if (!draw.factor[k]) continue;
    HDL_RETURN_IF_ERROR(kFns[k](first ? src : ConstTensorView(dst), dst, *draw.factor[k]));
    first = false;
  }
  if (first) copy(src, dst);
  return Status::ok();
}

namespace {

// apply_color_jitter on the device: the same steps in the same order, the first from `src`
// into `dst`, the others in place; a device copy when all are off.
Status apply_color_jitter_device(const ColorJitterDraw& draw, const ConstTensorView& src, const TensorView& dst,
                                 kernels::cuda::DeviceWorkspace& workspace, hdl::cuda::Stream& stream) {
  bool first = true;
  for (int k : draw.order) {
    if (!draw.factor[k]) continue;
    const ConstTensorView from = first ? src : ConstTensorView(dst);
    const double f = *draw.factor[k];
    switch (k) {
      case 0: HDL_RETURN_IF_ERROR(kernels::cuda::adjust_brightness(from, dst, f, stream)); break;
      case 1: HDL_RETURN_IF_ERROR(kernels::cuda::adjust_contrast(from, dst, f, workspace, stream)); break;
      case 2: HDL_RETURN_IF_ERROR(kernels::cuda::adjust_saturation(from, dst, f, stream)); break;
      default: HDL_RETURN_IF_ERROR(kernels::cuda::adjust_hue(from, dst, f, stream)); break;
    }
    first = false;
  }
  if (first) return kernels::cuda::crop(src, 0, 0, dst, stream);
  return Status::ok();
}

class ColorJitterOp final : public Operator {
 public:
  explicit ColorJitterOp(const NodeSpec& n) : probability_(n.get_float("probability")) {
    const char* names[4] = {"brightness", "contrast", "saturation", "hue"};
    for (int k = 0; k < 4; ++k) ranges_.range[k] = parse_jitter_range(names[k], n.get_floats(names[k]), k == 3);
  }

  std::vector<TensorSpec> infer_outputs(std::span<const TensorSpec> in) const override {
    ops::require_hwc(in[0], {DType::kU8}, {1, 3});
    return {in[0]};
  }

  Status run(SampleIO& io) const override {
    const ConstTensorView& in = io.input(0);
    HDL_ASSIGN_OR_RETURN(const std::optional<ColorJitterDraw> d, draw(io));
    HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, in.shape, DType::kU8, Layout::kHWC));
    if (!d) {
      copy(in, out);
      return Status::ok();
    }
    return apply_color_jitter(*d, in, out);
  }

  Status run_batch(BatchIO& io) const override {
    for (int64_t s = 0; s < io.size(); ++s) {
      const ConstTensorView& in = io.input(0, s);
      HDL_ASSIGN_OR_RETURN(const std::optional<ColorJitterDraw> d, draw(io.sample_io(s)));
      HDL_ASSIGN_OR_RETURN(TensorView out, io.output(0, s, in.shape, DType::kU8, Layout::kHWC));
      // A skipped sample is a draw with every adjustment off: a copy.
      HDL_RETURN_IF_ERROR(apply_color_jitter_device(d ? *d : ColorJitterDraw{}, in, out, io.workspace(), io.stream()));
    }
    return Status::ok();
  }

 private:
  // Both stages. RandomApply([ColorJitter(...)], p): the apply draw first, then (if applied)
  // the jitter's own; nullopt: skipped.
  Result<std::optional<ColorJitterDraw>> draw(SampleIO& io) const {
    HDL_ASSIGN_OR_RETURN(const bool apply, ops::apply_draw(io, probability_));
    if (!apply) return std::optional<ColorJitterDraw>();
    return std::optional<ColorJitterDraw>(draw_color_jitter(ranges_, io.rng()));
  }

  ColorJitterRanges ranges_;
  double probability_;
};

ArgSchema jitter_arg(const char* name, const char* doc) {
  return {name, ArgType::kFloats, ArgValue(std::vector<double>{}), doc, list_size({0, 1, 2})};
}

}  // namespace

OpSchema color_jitter_schema() {
  OpSchema s;
  s.name = "color_jitter";
  s.doc = "torchvision ColorJitter on HWC uint8 images: per sample, a random order of "
          "brightness, contrast, saturation and hue, each with a factor drawn uniformly from its "
          "range (torchvision's argument rules: b -> [max(0, 1 - b), 1 + b], hue h -> [-h, h], or "
          "[low, high]; [] or 0 turns an adjustment off); applied with `probability` (RandomApply; "
          "a skipped sample is copied and draws no factors).";
  s.inputs = {{"images", "HWC uint8, 1 or 3 channels"}};
  s.outputs = {{"images", "same shape"}};
  s.uses_randomness = true;
  s.args = {
      jitter_arg("brightness", "[] off, [b] (b >= 0) or [low, high]"),
      jitter_arg("contrast", "[] off, [c] (c >= 0) or [low, high]"),
      jitter_arg("saturation", "[] off, [s] (s >= 0) or [low, high]"),
      jitter_arg("hue", "[] off, [h] (0 <= h <= 0.5) or [low, high] within [-0.5, 0.5]"),
      ops::probability_arg(1.0),
  };
  s.stages = {Stage::kCpu, Stage::kDevice};
  s.create = [](const NodeSpec& n) { return std::make_unique<ColorJitterOp>(n); };
  s.create_device = s.create;
  return s;
}

}  // namespace hdl
