#include "pipeline/operators/decode_geometry.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace hdl {

double StreamDraws::uniform(double lo, double hi) {
  // A float32 result like torch's uniform_ on a float tensor; kept below hi after rounding.
  float v = static_cast<float>(lo + (hi - lo) * static_cast<double>(rng_.uniform()));
  if (hi > lo && v >= static_cast<float>(hi)) v = std::nextafter(static_cast<float>(hi), static_cast<float>(lo));
  return v;
}

int64_t StreamDraws::randint(int64_t n) { return static_cast<int64_t>(rng_.below(static_cast<uint64_t>(n))); }

int64_t round_half_even(double v) { return static_cast<int64_t>(std::nearbyint(v)); }

namespace {

// The fallback of get_params: the whole image, or its central part clamped to the ratio range.
CropWindow central_crop_fallback(SizeHW image, const RandomResizedCropParams& p) {
  const double in_ratio = static_cast<double>(image.w) / static_cast<double>(image.h);
  const double min_ratio = std::min(p.ratio_lo, p.ratio_hi), max_ratio = std::max(p.ratio_lo, p.ratio_hi);
  int64_t w = image.w, h = image.h;
  if (in_ratio < min_ratio) {
    h = round_half_even(static_cast<double>(w) / min_ratio);
  } else if (in_ratio > max_ratio) {
    w = round_half_even(static_cast<double>(h) * max_ratio);
  }
  return {(image.h - h) / 2, (image.w - w) / 2, h, w};
}

}  // namespace

CropWindow random_resized_crop_window(SizeHW image, const RandomResizedCropParams& p,
                                      CropDraws& draws) {
  const double area = static_cast<double>(image.h * image.w);
  // torch.log(torch.tensor(ratio)): float32 logs, widened when passed to uniform_.
  const float log_lo = std::log(static_cast<float>(p.ratio_lo));
  const float log_hi = std::log(static_cast<float>(p.ratio_hi));
  for (int attempt = 0; attempt < p.attempts; ++attempt) {
    const double target_area = area * draws.uniform(p.scale_lo, p.scale_hi);
    // torch.exp of a float32 tensor, then .item().
    const double aspect = std::exp(static_cast<float>(draws.uniform(log_lo, log_hi)));
    const int64_t w = round_half_even(std::sqrt(target_area * aspect));
    const int64_t h = round_half_even(std::sqrt(target_area / aspect));
    if (0 < w && w <= image.w && 0 < h && h <= image.h) {
      const int64_t top = draws.randint(image.h - h + 1);
      const int64_t left = draws.randint(image.w - w + 1);
      return {top, left, h, w};
    }
  }
  return central_crop_fallback(image, p);
}

std::optional<CropWindow> random_erasing_window(SizeHW image, const RandomErasingParams& p,
                                                CropDraws& draws) {
  const double area = static_cast<double>(image.h * image.w);
  const float log_lo = std::log(static_cast<float>(p.ratio_lo));
  const float log_hi = std::log(static_cast<float>(p.ratio_hi));
  for (int attempt = 0; attempt < p.attempts; ++attempt) {
    const double erase_area = area * draws.uniform(p.scale_lo, p.scale_hi);
    const double aspect = std::exp(static_cast<float>(draws.uniform(log_lo, log_hi)));
    // RandomErasing's ratio is h / w (RandomResizedCrop's is w / h).
    const int64_t h = round_half_even(std::sqrt(erase_area * aspect));
    const int64_t w = round_half_even(std::sqrt(erase_area / aspect));
    if (!(h < image.h && w < image.w)) continue;
    const int64_t top = draws.randint(image.h - h + 1);
    const int64_t left = draws.randint(image.w - w + 1);
    return CropWindow{top, left, h, w};
  }
  return std::nullopt;
}

int64_t crop_offset(int64_t size, int64_t crop, double pos) {
  if (size >= crop) return round_half_even(pos * static_cast<double>(size - crop));
  return -static_cast<int64_t>(std::floor(pos * static_cast<double>(crop - size)));
}

int64_t crop_offset_binned(int64_t size, int64_t crop, double pos) {
  const int64_t room = size >= crop ? size - crop : crop - size;
  const int64_t k = std::min(static_cast<int64_t>(std::floor(pos * static_cast<double>(room + 1))), room);
  return size >= crop ? k : -k;
}

CropWindow center_crop_window(SizeHW image, SizeHW crop) {
  return {crop_offset(image.h, crop.h, 0.5), crop_offset(image.w, crop.w, 0.5), crop.h, crop.w};
}

std::optional<SizeHW> crop_size_arg(std::span<const int64_t> size) {
  if (size.empty()) return std::nullopt;
  return size.size() == 1 ? SizeHW{size[0], size[0]} : SizeHW{size[0], size[1]};
}

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
void place_output(DecodePlan& plan, const std::optional<SizeHW>& center_crop) {
  const CropWindow crop = center_crop ? center_crop_window(plan.full_out, *center_crop)
                                      : CropWindow{0, 0, plan.full_out.h, plan.full_out.w};
  const int64_t y0 = std::max<int64_t>(crop.top, 0), x0 = std::max<int64_t>(crop.left, 0);
  const int64_t y1 = std::min(crop.top + crop.height, plan.full_out.h);
  const int64_t x1 = std::min(crop.left + crop.width, plan.full_out.w);
  plan.dst_origin = {y0, x0};
  plan.dst_size = {y1 - y0, x1 - x0};
  plan.dst_in_output = {y0 - crop.top, x0 - crop.left};
  plan.out_size = {crop.height, crop.width};
}

}  // namespace

const FusedDecodeArgs& sample_fused_args(const FusedDecodeArgs& args, RandomStream& rng, FusedDecodeArgs& scratch) {
  if (args.random_filters.empty()) return args;
  scratch = args;
  scratch.options.filter = args.random_filters[rng.below(args.random_filters.size())];
  return scratch;
}

Result<DecodePlan> plan_decode(SizeHW image, const CropWindow& window, const FusedDecodeArgs& args,
                               int max_denom, kernels::ResizeWorkspace& ws) {
  if (window.top < 0 || window.left < 0 || window.height <= 0 || window.width <= 0 ||
      window.top + window.height > image.h || window.left + window.width > image.w) {
    return Status::invalid_argument("crop window outside the image");
  }
  DecodePlan plan;
  const SizeHW win_size{window.height, window.width};
  plan.full_out = args.resize.empty() ? win_size : kernels::resize_output_size(win_size, args.resize, args.max_size);
  place_output(plan, args.center_crop);
  plan.denom = choose_denom(window, plan.full_out, args, max_denom);
  const int d = plan.denom;
  const CropWindow scaled = scaled_window(image, window, d);
  plan.full_in = {scaled.height, scaled.width};
  plan.resample = !(plan.full_in == plan.full_out);
  kernels::PixelSpan span{plan.dst_origin.y, plan.dst_origin.y + plan.dst_size.h, plan.dst_origin.x,
                          plan.dst_origin.x + plan.dst_size.w};
  if (plan.resample) {
    HDL_ASSIGN_OR_RETURN(span, kernels::resize_source_span(plan.full_in, plan.full_out, plan.dst_origin,
                                                           plan.dst_size, args.options, &ws));
  }
  plan.src_origin = {span.y0, span.x0};
  plan.decoded = {span.h(), span.w()};
  // The span in the scaled image, back to image pixels (aligned, clipped at the image's end).
  const int64_t y0 = (scaled.top + span.y0) * d, x0 = (scaled.left + span.x0) * d;
  const int64_t y1 = std::min((scaled.top + span.y1) * d, image.h);
  const int64_t x1 = std::min((scaled.left + span.x1) * d, image.w);
  plan.roi = Roi{x0, y0, x1 - x0, y1 - y0};
  return plan;
}

}  // namespace hdl
