// Device colour kernels: the twins of pipeline/kernels/color.h's channel swap, grayscale and
// ColorJitter pieces on CUDA device views, with the CPU kernels' float32 arithmetic in the same
// order (compiled with -fmad=false: no fused multiply-adds) and the same truncation, so results
// are intended to be bit-identical (docs/CUDA.md gives the tested bounds).
//
// Views are HWC uint8 ([H, W, 3], or 1 channel where stated), any strides, on the stream's
// device. Pointwise kernels accept dst == src exactly (in place); other overlaps are not
// allowed. Each call only enqueues work on `stream`.
//
// Thread safety: reentrant; the workspace (adjust_contrast) is per stream.
#pragma once

#include "media/api.h"
#include "media/cuda/stream.h"
#include "media/status.h"
#include "media/tensor.h"
#include "pipeline/kernels/cuda/workspace.h"

HDL_API_BEGIN
namespace hdl::kernels::cuda {

/// RGB <-> BGR: swaps channels 0 and 2 of a 3- or 4-channel HWC image of any dtype.
Status swap_red_blue(const ConstTensorView& src, const TensorView& dst, hdl::cuda::Stream& stream);

/// torchvision rgb_to_grayscale, truncated; dst [H, W, 1] or [H, W, 3]; a 1-channel src is copied.
Status rgb_to_grayscale(const ConstTensorView& src, const TensorView& dst, hdl::cuda::Stream& stream);

/// torchvision adjust_brightness: (uint8)clamp(factor * x). factor >= 0. 1 or 3 channels.
Status adjust_brightness(const ConstTensorView& src, const TensorView& dst, double factor,
                         hdl::cuda::Stream& stream);

/// torchvision adjust_contrast: blend with the mean of the truncated grayscale image (summed
/// exactly in 64-bit integers on the device into `workspace`). factor >= 0. 1 or 3 channels.
Status adjust_contrast(const ConstTensorView& src, const TensorView& dst, double factor,
                       DeviceWorkspace& workspace, hdl::cuda::Stream& stream);

/// torchvision adjust_saturation: blend each pixel with its truncated grayscale value.
/// factor >= 0. A 1-channel image is copied.
Status adjust_saturation(const ConstTensorView& src, const TensorView& dst, double factor,
                         hdl::cuda::Stream& stream);

/// torchvision adjust_hue (its _rgb2hsv / _hsv2rgb in float32). hue_factor in [-0.5, 0.5].
/// A 1-channel image is copied.
Status adjust_hue(const ConstTensorView& src, const TensorView& dst, double hue_factor,
                  hdl::cuda::Stream& stream);

}  // namespace hdl::kernels::cuda
HDL_API_END
