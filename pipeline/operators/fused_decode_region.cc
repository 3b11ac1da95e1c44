#include "pipeline/operators/fused_decode_region.h"

#include <algorithm>

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
