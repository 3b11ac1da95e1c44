// Window geometry of the cropping operators, with torchvision 0.14's rounding: the
// RandomResizedCrop window (get_params), the RandomErasing rectangle (get_params), CenterCrop
// offsets (with its zero padding when the crop is larger than the image), and the random draws
// they are made from. The fused image_decoder's region is fused_decode_region.h's.
//
// Internal to pipeline/ (pipeline/decode/: the crop operators' and the fused decode's). Thread
// safety: pure functions; a CropDraws is used by one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "media/api.h"
#include "pipeline/kernels/resize.h"
#include "pipeline/random.h"

HDL_API_BEGIN
namespace hdl {

using kernels::SizeHW;

/// A window of an image: top-left corner and size. Offsets may be negative and the window may
/// extend past the image (a crop larger than the image, padded with a fill value).
struct CropWindow {
  int64_t top = 0;
  int64_t left = 0;
  int64_t height = 0;
  int64_t width = 0;
  friend bool operator==(const CropWindow&, const CropWindow&) = default;
};

/// Where RandomResizedCrop's random numbers come from, called in torchvision's order. A test
/// supplies numbers recorded from torchvision; pipelines use StreamDraws.
class CropDraws {
 public:
  virtual ~CropDraws() = default;
  /// As torch.empty(1).uniform_(lo, hi).item(): a float32 value in [lo, hi), widened to double.
  virtual double uniform(double lo, double hi) = 0;
  /// As torch.randint(0, n, size=(1,)).item(): an integer in [0, n). Precondition: n >= 1.
  virtual int64_t randint(int64_t n) = 0;
};

/// CropDraws from a pipeline's per-sample RandomStream (not owned; must outlive this).
class StreamDraws final : public CropDraws {
 public:
  explicit StreamDraws(RandomStream& rng) : rng_(rng) {}
  double uniform(double lo, double hi) override;
  int64_t randint(int64_t n) override;

 private:
  RandomStream& rng_;
};

/// RandomResizedCrop's arguments (torchvision defaults).
struct RandomResizedCropParams {
  double scale_lo = 0.08;       ///< area fraction range [scale_lo, scale_hi]
  double scale_hi = 1.0;
  double ratio_lo = 3.0 / 4.0;  ///< aspect ratio (w / h) range, sampled log-uniformly
  double ratio_hi = 4.0 / 3.0;
  int attempts = 10;            ///< tries before the central-crop fallback (torchvision: 10)
};

/// torchvision 0.14 RandomResizedCrop.get_params on an image of `image` size: up to `attempts`
/// times draw an area fraction and a log aspect ratio (float32 draws, log of the float32
/// ratios), w = round(sqrt(area * r)), h = round(sqrt(area / r)) (half to even); if the window
/// fits, draw top then left uniformly and return it; else the central crop clamped to the
/// ratio range. Always inside the image. Precondition: positive sizes, lo <= hi.
CropWindow random_resized_crop_window(SizeHW image, const RandomResizedCropParams& p,
                                      CropDraws& draws);

/// RandomErasing's arguments (torchvision defaults).
struct RandomErasingParams {
  double scale_lo = 0.02;  ///< erased area fraction range [scale_lo, scale_hi]
  double scale_hi = 0.33;
  double ratio_lo = 0.3;   ///< aspect ratio (h / w) range, sampled log-uniformly
  double ratio_hi = 3.3;
  int attempts = 10;       ///< tries before giving up (torchvision: 10)
};

/// torchvision 0.14 RandomErasing.get_params on an image of `image` size: up to `attempts`
/// times draw an area fraction and a log aspect ratio (float32 draws, log of the float32
/// ratios), h = round(sqrt(area * r)), w = round(sqrt(area / r)) (half to even); if h < H and
/// w < W (strictly), draw top then left uniformly and return the rectangle (h or w may be 0:
/// an empty rectangle); nullopt when no attempt fits (torchvision returns the image unchanged).
/// Precondition: positive sizes, 0 <= scale_lo <= scale_hi, 0 < ratio_lo <= ratio_hi.
std::optional<CropWindow> random_erasing_window(SizeHW image, const RandomErasingParams& p,
                                                CropDraws& draws);

/// Python's int(round(v)) for a double: nearest integer, ties to even.
int64_t round_half_even(double v);

/// The offset of a crop of `crop` pixels along an axis of `size` pixels, at relative position
/// `pos` in [0, 1]: round_half_even(pos * (size - crop)) when the crop fits; when it does not,
/// -floor(pos * (crop - size)), which at pos 0.5 is where torchvision's CenterCrop puts the image
/// after padding it ((crop - size) // 2 on the left/top).
int64_t crop_offset(int64_t size, int64_t crop, double pos);

/// The offset of a crop at relative position `pos` in [0, 1] with the axis cut into equal
/// bins, one per offset: min(floor(pos * (size - crop + 1)), size - crop) when the crop fits,
/// else -min(floor(pos * (crop - size + 1)), crop - size). A uniform `pos` then gives every
/// integer offset equally often (torchvision RandomCrop's torch.randint(0, size - crop + 1)),
/// where crop_offset gives the two end offsets half as often as the others.
int64_t crop_offset_binned(int64_t size, int64_t crop, double pos);

/// torchvision CenterCrop's window: crop_offset(size, crop, 0.5) on each axis.
CropWindow center_crop_window(SizeHW image, SizeHW crop);

/// A crop-size argument: [s] -> s x s, [h, w] -> h x w; empty -> nullopt.
std::optional<SizeHW> crop_size_arg(std::span<const int64_t> size);

}  // namespace hdl
HDL_API_END
