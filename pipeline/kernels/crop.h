// Geometry kernels: crop (with fill outside the image), pad, flip, HWC <-> CHW transpose.
//
// All take 3-D views of any dtype and any strides (HWC unless the name says CHW), write into
// caller-provided memory and allocate nothing. Results match torchvision.transforms.functional
// (crop, pad, hflip, vflip) and Tensor.permute on the same data exactly.
//
// Thread safety: pure, reentrant functions; concurrent calls may share `src` but not `dst`.
#pragma once

#include <cstdint>
#include <span>

#include "media/api.h"
#include "media/status.h"
#include "media/tensor.h"

HDL_API_BEGIN
namespace hdl::kernels {

/// The window [top, top + H) x [left, left + W) of `src` (HWC, any dtype) into `dst`
/// ([H, W, C], same dtype and C); the window may extend past the image on any side (or miss it
/// entirely): those pixels get `fill` (torchvision F.crop pads with 0 the same way).
/// `fill`: empty (0), one value for all channels, or one per channel; converted to the dtype
/// (saturating, truncating for integers). Returns InvalidArgument on mismatched views or fill.
Status crop(const ConstTensorView& src, int64_t top, int64_t left, const TensorView& dst,
            std::span<const double> fill = {});

/// torchvision F.pad padding modes. Python names: "constant", "edge", "reflect", "symmetric".
enum class PadMode : uint8_t {
  kConstant,   ///< fill value
  kEdge,       ///< repeat the edge pixel
  kReflect,    ///< mirror without repeating the edge: [2 1 | 0 1 2 3 | 2 1]
  kSymmetric,  ///< mirror repeating the edge: [1 0 | 0 1 2 3 | 3 2]
};

/// Parses the Python names above; throws std::invalid_argument naming them.
PadMode parse_pad_mode(const char* name);

/// Pixels added on each side; negative values crop that side first (as torchvision does).
struct Padding {
  int64_t left = 0;
  int64_t top = 0;
  int64_t right = 0;
  int64_t bottom = 0;
};

/// Pads `src` (HWC, any dtype) into `dst` of [H + top + bottom, W + left + right, C].
/// Reflect and symmetric fold again when a pad exceeds the image (torch would refuse).
/// Returns InvalidArgument on a wrong dst shape, a dtype mismatch or a bad fill.
Status pad(const ConstTensorView& src, const Padding& padding, PadMode mode,
           const TensorView& dst, std::span<const double> fill = {});

/// Flips `src` (HWC, any dtype) into `dst` (same shape and dtype) left-right and/or up-down.
/// `dst` must not overlap `src`.
Status flip(const ConstTensorView& src, const TensorView& dst, bool horizontal, bool vertical);

/// [H, W, C] -> [C, H, W], any dtype (Tensor.permute(2, 0, 1).contiguous()).
Status hwc_to_chw(const ConstTensorView& src, const TensorView& dst);

/// [C, H, W] -> [H, W, C], any dtype.
Status chw_to_hwc(const ConstTensorView& src, const TensorView& dst);

}  // namespace hdl::kernels
HDL_API_END
