#include "pipeline/operators/op_util.h"

#include <algorithm>
#include <cmath>

#include "pipeline/spec.h"

namespace hdl::ops {

void require_hwc(const TensorSpec& s, std::initializer_list<DType> dtypes,
                 std::initializer_list<int64_t> channels) {
  const bool dtype_ok = dtypes.size() == 0 || std::find(dtypes.begin(), dtypes.end(), s.dtype) != dtypes.end();
  const int64_t c = dim(s, 2);
  const bool channels_ok = channels.size() == 0 || c < 0 ||
                           std::find(channels.begin(), channels.end(), c) != channels.end();
  if (s.layout == Layout::kHWC && s.shape.ndim() == 3 && dtype_ok && channels_ok) return;
  std::string want;
  for (DType t : dtypes) want += (want.empty() ? "" : " or ") + std::string(dtype_name(t));
  std::string chans;
  for (int64_t n : channels) chans += (chans.empty() ? "" : " or ") + std::to_string(n);
  throw ConfigError("input must be HWC " + (want.empty() ? std::string() : want + " ") + "images" +
                    (chans.empty() ? "" : " with " + chans + " channels") + ", got " +
                    dtype_name(s.dtype) + " " + layout_name(s.layout) + " " + s.shape.to_string());
}

Result<double> float_arg(const SampleIO& io, const char* name, double constant, double lo, double hi) {
  const double v = io.scalar_arg(name, constant);
  if (!(v >= lo && v <= hi)) {
    return Status::invalid_argument("argument \"" + std::string(name) + "\" must be in [" +
                                    std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                                    std::to_string(v));
  }
  return v;
}

ArgSchema probability_arg(double dflt) {
  return {"probability", ArgType::kFloat, ArgValue(dflt),
          "probability of applying it to a sample (per sample: e.g. one coin_flip bound to several "
          "operators applies all or none, as RandomApply)", in_range(0, 1), true};
}

Result<bool> apply_draw(SampleIO& io, double constant) {
  HDL_ASSIGN_OR_RETURN(const double p, float_arg(io, "probability", constant, 0, 1));
  if (p >= 1) return true;
  if (p <= 0) return false;
  return static_cast<double>(io.rng().uniform()) < p;
}

bool may_skip(const NodeSpec& n) {
  return n.arg_inputs.count("probability") != 0 || n.get_float("probability") < 1;
}

ArgValidator odd_positive() {
  return [](const ArgValue& v) -> std::string {
    if (v.type() != ArgType::kInts) return "";
    for (int64_t k : v.get<std::vector<int64_t>>())
      if (k <= 0 || k % 2 == 0) return "must be odd and positive, got " + std::to_string(k);
    return "";
  };
}

void check_fill(const std::vector<double>& fill, int64_t channels, const char* arg) {
  if (channels < 0 || fill.size() <= 1 || static_cast<int64_t>(fill.size()) == channels) return;
  throw ConfigError("argument \"" + std::string(arg) + "\" has " + std::to_string(fill.size()) +
                    " values for " + std::to_string(channels) + " channels");
}

std::vector<uint8_t> pil_fill_arg(const NodeSpec& n) {
  std::vector<uint8_t> fill;
  for (double f : n.get_floats("fill")) fill.push_back(static_cast<uint8_t>(std::trunc(f)));
  return fill;
}

TensorSpec pil_image_output(const TensorSpec& in, const std::vector<uint8_t>& fill) {
  require_hwc(in, {DType::kU8}, {1, 3});
  check_fill(std::vector<double>(fill.begin(), fill.end()), dim(in, 2));
  return in;
}

namespace {

// A [lo, hi] pair argument with 0 < lo <= hi (scale allows lo == 0).
void check_range(const NodeSpec& n, const std::string& arg, bool allow_zero) {
  const auto& v = n.get_floats(arg);
  if (v[0] > v[1] || v[1] <= 0 || (!allow_zero && v[0] <= 0))
    throw ConfigError("argument \"" + arg + "\" must be [low, high] with " +
                      (allow_zero ? "0 <= low <= high, high > 0" : "0 < low <= high") + ", got " +
                      ArgValue(v).to_string());
}

}  // namespace

std::vector<ArgSchema> fused_geometry_args(const std::string& what) {
  const std::vector<std::string> filters = {"nearest", "bilinear", "bicubic", "box", "lanczos"};
  return {
      {"random_crop", ArgType::kString, ArgValue("none"), "none, or resized: a torchvision RandomResizedCrop window (scale, ratio, attempts) of the " + what, one_of({"none", "resized"})},
      {"scale", ArgType::kFloats, ArgValue({0.08, 1.0}), "random_crop: range of the window's area fraction", all_of({list_size({2}), at_least(0)})},
      {"ratio", ArgType::kFloats, ArgValue({3.0 / 4.0, 4.0 / 3.0}), "random_crop: range of the window's aspect ratio (w / h), sampled log-uniformly", all_of({list_size({2}), at_least(0)})},
      {"attempts", ArgType::kInt, ArgValue(10), "random_crop: tries before the central-crop fallback", at_least(0)},
      {"resize", ArgType::kInts, ArgValue(std::vector<int64_t>{}), "[] none, [s] shorter side to s (torchvision Resize(int)), or [h, w]", all_of({list_size({0, 1, 2}), at_least(1)})},
      {"max_size", ArgType::kInt, ArgValue(0), "if > 0, the longer side after resize [s] is at most this", at_least(0)},
      {"interpolation", ArgType::kString, ArgValue("bilinear"), "nearest, bilinear, bicubic, box or lanczos", one_of(filters)},
      {"random_interpolation", ArgType::kStrings, ArgValue(std::vector<std::string>{}), "[] none, or filters to draw each sample's from uniformly (after the crop window; interpolation is then unused): timm's RandomResizedCropAndInterpolation(interpolation='random') is [bilinear, bicubic]", one_of(filters)},
      {"antialias", ArgType::kBool, ArgValue(true), "low-pass when downscaling, as torchvision antialias=True and PIL"},
      {"pillow", ArgType::kBool, ArgValue(false), "PIL.Image.resize's arithmetic (what torchvision does to PIL images): Pillow's weights and uint8 rounding, bit-exact with Pillow; antialias is then ignored (Pillow always low-passes)"},
      {"center_crop", ArgType::kInts, ArgValue(std::vector<int64_t>{}), "[] none, [s] or [h, w]: torchvision CenterCrop after the resize (padded with 0 where larger)", all_of({list_size({0, 1, 2}), at_least(1)})},
  };
}

RandomResizedCropParams parse_random_resized_crop(const NodeSpec& n) {
  check_range(n, "scale", true);
  check_range(n, "ratio", false);
  RandomResizedCropParams p;
  p.scale_lo = n.get_floats("scale")[0], p.scale_hi = n.get_floats("scale")[1];
  p.ratio_lo = n.get_floats("ratio")[0], p.ratio_hi = n.get_floats("ratio")[1];
  p.attempts = static_cast<int>(n.get_int("attempts"));
  return p;
}

FusedDecodeArgs parse_fused_geometry(const NodeSpec& n) {
  FusedDecodeArgs f;
  f.resize = n.get_ints("resize");
  if (const int64_t m = n.get_int("max_size"); m > 0) f.max_size = m;
  f.center_crop = crop_size_arg(n.get_ints("center_crop"));
  f.options.filter = kernels::parse_resize_filter(n.get_string("interpolation").c_str());
  for (const std::string& name : n.get_strings("random_interpolation"))
    f.random_filters.push_back(kernels::parse_resize_filter(name.c_str()));
  f.options.antialias = n.get_bool("antialias");
  f.options.pillow = n.get_bool("pillow");
  if (f.max_size && f.resize.size() != 1)
    throw ConfigError("argument \"max_size\" needs resize [shorter_side]");
  if (!f.resize.empty()) {
    try {  // torchvision's rules for size / max_size, at build time
      kernels::resize_output_size({100, 100}, f.resize, f.max_size);
    } catch (const std::invalid_argument& e) {
      throw ConfigError(std::string("argument \"resize\": ") + e.what());
    }
  }
  return f;
}

}  // namespace hdl::ops
