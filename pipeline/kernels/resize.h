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
// With ResizeOptions::pillow, the weights and the arithmetic are Pillow 9.4's instead
// (PIL.Image.resize): uint8 -> uint8 runs Pillow's own 22-bit fixed-point integer passes.
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
#include <memory>
#include <vector>

#include "media/api.h"
#include "media/status.h"
#include "media/tensor.h"

HDL_API_BEGIN
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
  /// Pillow's resampling, as PIL.Image.resize (what torchvision's Resize / RandomResizedCrop do
  /// to PIL images): Pillow's weights (computed in double; bilinear is the triangle filter,
  /// bicubic Keys a = -0.5, nearest Pillow's rule src = floor((i + 0.5) * in / out)), and for
  /// uint8 output its uint8 rounding: horizontal pass first, the intermediate rounded half up
  /// to uint8, the output rounded half up (uint8 -> uint8 in Pillow's integer arithmetic). Pillow always widens the filter when downscaling,
  /// so `antialias` is ignored (as torchvision ignores it for PIL images). Box and lanczos
  /// always use Pillow's rounding for uint8 output; float32 output is not rounded.
  bool pillow = false;
};

/// Per-thread scratch for resize(): weight tables, the intermediate image, one row. Grows to the
/// largest request seen and is then reused (no allocation in steady state). Not thread-safe:
/// one per thread.
namespace detail {
struct WeightTableCache;
struct WeightTableCacheDeleter {
  void operator()(WeightTableCache* c) const;
};
}  // namespace detail

struct ResizeWorkspace {
  std::vector<float> weights_x, weights_y;  ///< [out, taps] per axis
  std::vector<int32_t> start_x, start_y;    ///< first input index of each output pixel
  std::vector<float> intermediate;          ///< the image after the first pass
  std::vector<float> row;                   ///< one output row before conversion
  std::vector<int32_t> fixed_x, fixed_y;    ///< pillow: the weights as Pillow's 22-bit integers
  std::vector<uint8_t> mid_u8, bytes;       ///< pillow: uint8 intermediate image, one output row
  std::vector<int32_t> sums;                ///< pillow: one row of fixed-point sums
  /// Weight tables already computed, by (in, out, filter, antialias, pillow), so that a stream of
  /// images of few distinct sizes (random crops of a dataset) computes each table once. Bounded
  /// (a few MB); created on first use.
  std::unique_ptr<detail::WeightTableCache, detail::WeightTableCacheDeleter> tables;
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

/// A pixel position: row y, column x.
struct PointYX {
  int64_t y = 0;
  int64_t x = 0;
  friend bool operator==(const PointYX&, const PointYX&) = default;
};

/// Rows [y0, y1) and columns [x0, x1) of an image.
struct PixelSpan {
  int64_t y0 = 0, y1 = 0, x0 = 0, x1 = 0;
  int64_t h() const { return y1 - y0; }
  int64_t w() const { return x1 - x0; }
  friend bool operator==(const PixelSpan&, const PixelSpan&) = default;
};

/// The source pixels that resize_window() reads to produce the window of `dst_size` at
/// `dst_origin` of a `full_in` -> `full_out` resize: the union of each output pixel's taps
/// [start, start + taps) per axis (so the span lies inside full_in; it may include taps of
/// weight 0). An axis whose size does not change maps pixel i to pixel i.
/// Returns InvalidArgument when a size is not positive or the window leaves full_out.
/// `workspace` (optional) provides the weight-table scratch, so steady state allocates nothing.
Result<PixelSpan> resize_source_span(SizeHW full_in, SizeHW full_out, PointYX dst_origin,
                                     SizeHW dst_size, const ResizeOptions& options,
                                     ResizeWorkspace* workspace = nullptr);

/// The window of `dst`'s size at `dst_origin` of the resize of a (virtual) `full_in` image to
/// `full_out`, computed from `src`, which holds only the window of full_in at `src_origin`.
/// Uses exactly the weights, pass order and arithmetic of resize() on the full image, so
/// decoding only a region and resizing it gives the pixels of a full decode + resize + crop,
/// bit for bit (when src's rows are dense pixels, as the full image's are, or neither are).
/// Views as for resize() (HWC, uint8 or float32, any strides). Returns InvalidArgument when
/// src does not cover resize_source_span() of the window, a window leaves its full image, or
/// the views are bad as for resize().
Status resize_window(const ConstTensorView& src, PointYX src_origin, SizeHW full_in,
                     const TensorView& dst, PointYX dst_origin, SizeHW full_out,
                     const ResizeOptions& options, ResizeWorkspace& workspace);

}  // namespace hdl::kernels
HDL_API_END
