#include "pipeline/decode/crop_geometry.h"

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

}  // namespace hdl
