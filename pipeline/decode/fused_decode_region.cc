#include "pipeline/decode/fused_decode_region.h"

#include <algorithm>
#include <stdexcept>

#include "pipeline/errors.h"

namespace hdl {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
// a / b rounded to nearest (ties up), for a >= 0.
int64_t nearest_div(int64_t a, int64_t b) { return (2 * a + b) / (2 * b); }

// The largest DCT reduction that keeps the window at least twice `target` in both dimensions.
int choose_denom(const CropWindow& win, SizeHW target, const FusedDecodeArgs& args, int max_denom) {
  if (!args.dct_scaling) return 1;
  for (int d : {8, 4, 2}) {
    if (d <= max_denom && ceil_div(win.width, d) >= 2 * target.w && ceil_div(win.height, d) >= 2 * target.h)
      return d;
  }
  return 1;
}

// The window on the grid of the image scaled by 1/d (libjpeg: ceil(size / d) pixels), snapped
// to the nearest scaled pixels; identity for d == 1.
CropWindow scaled_window(SizeHW image, const CropWindow& w, int d) {
  if (d == 1) return w;
  const int64_t y0 = nearest_div(w.top, d), x0 = nearest_div(w.left, d);
  const int64_t y1 = std::min(nearest_div(w.top + w.height, d), ceil_div(image.h, d));
  const int64_t x1 = std::min(nearest_div(w.left + w.width, d), ceil_div(image.w, d));
  return {y0, x0, std::max<int64_t>(y1 - y0, 1), std::max<int64_t>(x1 - x0, 1)};
}

// Sets the kept window of the resized image and where it lands in the output.
void place_output(FusedDecodeRegion& region, const std::optional<SizeHW>& center_crop) {
  const CropWindow crop = center_crop ? center_crop_window(region.full_out, *center_crop)
                                      : CropWindow{0, 0, region.full_out.h, region.full_out.w};
  const int64_t y0 = std::max<int64_t>(crop.top, 0), x0 = std::max<int64_t>(crop.left, 0);
  const int64_t y1 = std::min(crop.top + crop.height, region.full_out.h);
  const int64_t x1 = std::min(crop.left + crop.width, region.full_out.w);
  region.dst_origin = {y0, x0};
  region.dst_size = {y1 - y0, x1 - x0};
  region.dst_in_output = {y0 - crop.top, x0 - crop.left};
  region.out_size = {crop.height, crop.width};
}

}  // namespace

const FusedDecodeArgs& sample_fused_args(const FusedDecodeArgs& args, RandomStream& rng, FusedDecodeArgs& scratch) {
  if (args.random_filters.empty()) return args;
  scratch = args;
  scratch.options.filter = args.random_filters[rng.below(args.random_filters.size())];
  return scratch;
}

Result<FusedDecodeRegion> fused_decode_region(SizeHW image, const CropWindow& window, const FusedDecodeArgs& args,
                                              int max_denom, kernels::ResizeWorkspace& ws) {
  if (window.top < 0 || window.left < 0 || window.height <= 0 || window.width <= 0 ||
      window.top + window.height > image.h || window.left + window.width > image.w) {
    return Status::invalid_argument("crop window outside the image");
  }
  FusedDecodeRegion region;
  const SizeHW win_size{window.height, window.width};
  region.full_out = args.resize.empty() ? win_size : kernels::resize_output_size(win_size, args.resize, args.max_size);
  place_output(region, args.center_crop);
  region.denom = choose_denom(window, region.full_out, args, max_denom);
  const int d = region.denom;
  const CropWindow scaled = scaled_window(image, window, d);
  region.full_in = {scaled.height, scaled.width};
  region.resample = !(region.full_in == region.full_out);
  kernels::PixelSpan span{region.dst_origin.y, region.dst_origin.y + region.dst_size.h, region.dst_origin.x,
                          region.dst_origin.x + region.dst_size.w};
  if (region.resample) {
    HDL_ASSIGN_OR_RETURN(span, kernels::resize_source_span(region.full_in, region.full_out, region.dst_origin,
                                                           region.dst_size, args.options, &ws));
  }
  region.src_origin = {span.y0, span.x0};
  region.decoded = {span.h(), span.w()};
  // The span in the scaled image, back to image pixels (aligned, clipped at the image's end).
  const int64_t y0 = (scaled.top + span.y0) * d, x0 = (scaled.left + span.x0) * d;
  const int64_t y1 = std::min((scaled.top + span.y1) * d, image.h);
  const int64_t x1 = std::min((scaled.left + span.x1) * d, image.w);
  region.roi = Roi{x0, y0, x1 - x0, y1 - y0};
  return region;
}

}  // namespace hdl

namespace hdl::ops {

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
