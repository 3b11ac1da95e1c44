// Resize kernels: separable resampling of HWC images, matching torchvision 0.14's tensor path.
//
// The weights follow ATen's `_upsample_*2d_aa` ("PIL-style" resampling, used by
// torchvision.transforms.functional.resize(..., antialias=True)): output pixel i of an axis is
// centred on input coordinate (i + 0.5) * in / out; when downscaling with antialias, the filter's
// support is widened by the scale factor; the weights of each output pixel are normalised to sum
// to one. Without antialias, bilinear and bicubic follow plain `torch.nn.functional.interpolate`
// (align_corners=False; bicubic a = -0.75, clamped border indices); nearest follows torch's
// 'nearest' index rule (src = min(floor(dst * (float)in / out), in - 1)) exactly.
//
// The work is one horizontal and one vertical pass in float32 through an intermediate buffer held
// in a ResizeWorkspace; a pass whose axis keeps its size is skipped (it would be the identity).
//
// Thread safety: the functions are pure and reentrant. A ResizeWorkspace is mutable scratch:
// keep one per thread (it is not shared), reuse it across calls so that steady state allocates
// nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "media/status.h"
#include "media/tensor.h"

namespace hdl::kernels {

/// The resampling filter. Python names: "nearest", "bilinear", "bicubic", "box", "lanczos".
enum class ResizeFilter : uint8_t {
  kNearest,  ///< torch 'nearest' (not 'nearest-exact'); antialias is ignored
  kLinear,   ///< triangle filter, support 1
  kCubic,    ///< Keys cubic, support 2: a = -0.5 with antialias (ATen aa / Pillow), else -0.75
  kBox,      ///< box filter, support 0.5 (Pillow BOX)
  kLanczos,  ///< Lanczos-3, support 3 (Pillow LANCZOS)
};

/// Parses "nearest", "bilinear" ("linear"), "bicubic" ("cubic"), "box", "lanczos" ("lanczos3").
/// Throws std::invalid_argument naming the accepted values.
ResizeFilter parse_resize_filter(const char* name);

/// How to resize.
struct ResizeOptions {
  ResizeFilter filter = ResizeFilter::kLinear;  ///< default: bilinear, like torchvision
  bool antialias = true;  ///< widen the filter when downscaling (torchvision antialias=True)
};

/// Per-thread scratch for resize(): weight tables, the intermediate image, one row. Grows to the
/// largest request seen and is then reused (no allocation in steady state). Not thread-safe:
/// one per thread.
struct ResizeWorkspace {
  std::vector<float> weights_x, weights_y;  ///< [out, taps] per axis
  std::vector<int32_t> start_x, start_y;    ///< first input index of each output pixel
  std::vector<float> intermediate;          ///< the image after the first pass
  std::vector<float> row;                   ///< one output row before conversion
};

/// Resizes `src` (HWC [H, W, C], uint8 or float32, any strides, e.g. a crop_hw window) into
/// `dst` (HWC [out_h, out_w, C], uint8 or float32, any strides); the output size is dst's.
/// uint8 output is clamped to [0, 255] and rounded half to even (torch.round then .to(uint8));
/// float32 output is neither rounded nor clamped (what torch gives for float input).
/// Returns InvalidArgument for a non-3-D view, a dtype other than uint8/float32, mismatched
/// channel counts or an empty input/output. `src` and `dst` must not overlap.
Status resize(const ConstTensorView& src, const TensorView& dst, const ResizeOptions& options,
              ResizeWorkspace& workspace);

/// An image size in pixels.
struct SizeHW {
  int64_t h = 0;
  int64_t w = 0;
  friend bool operator==(const SizeHW&, const SizeHW&) = default;
};

/// torchvision `Resize(size, max_size=...)` output size for an image of `in`: `size` of one
/// element is the shorter side (the longer is int(size * long / short), truncated; with
/// `max_size`, a longer side above it is clamped to max_size and the shorter side rescaled as
/// int(max_size * short / long)); `size` of two elements is (h, w) taken as is.
/// Throws std::invalid_argument when `size` has another length, a size is not positive, or
/// max_size is given with two sizes or is <= the requested shorter side (torchvision's errors).
SizeHW resize_output_size(SizeHW in, std::span<const int64_t> size,
                          std::optional<int64_t> max_size = std::nullopt);

}  // namespace hdl::kernels
