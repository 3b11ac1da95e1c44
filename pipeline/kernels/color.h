// Colour kernels: channel order, grayscale, YCbCr, solarize, and the ColorJitter pieces (brightness,
// contrast, saturation, hue) with torchvision 0.14's uint8 tensor semantics: the arithmetic is
// float32 in torchvision's order, and the result is clamped to [0, 255] and truncated (.to(uint8)),
// which is what torchvision's _blend and rgb_to_grayscale do.
//
// Views are HWC uint8 ([H, W, 3], or [H, W, 1] where stated), any strides. Pointwise kernels
// accept dst == src exactly (in place); other overlaps are not allowed.
//
// Thread safety: pure, reentrant functions; concurrent calls may share `src` but not `dst`.
#pragma once

#include "media/api.h"
#include "media/status.h"
#include "media/tensor.h"

HDL_API_BEGIN
namespace hdl::kernels {

/// Swaps channels 0 and 2 (RGB <-> BGR) of a 3- or 4-channel HWC image of any dtype.
Status swap_red_blue(const ConstTensorView& src, const TensorView& dst);

/// torchvision rgb_to_grayscale: (uint8)(0.2989f * r + 0.587f * g + 0.114f * b), truncated.
/// `dst` is [H, W, 1], or [H, W, 3] for num_output_channels=3 (the value repeated).
/// A 1-channel `src` is copied.
Status rgb_to_grayscale(const ConstTensorView& src, const TensorView& dst);

/// RGB -> YCbCr, ITU-R BT.601 full range as JPEG/PIL ("YCbCr" mode): Y = .299 R + .587 G +
/// .114 B, Cb = 128 + (B - Y) / 1.772, Cr = 128 + (R - Y) / 1.402, in float32, rounded down
/// and clamped (Pillow shifts its fixed-point sums right, i.e. rounds down, too).
Status rgb_to_ycbcr(const ConstTensorView& src, const TensorView& dst);

/// The inverse of rgb_to_ycbcr (R = Y + 1.402 Cr', G = Y - .344136 Cb' - .714136 Cr',
/// B = Y + 1.772 Cb', with Cb' = Cb - 128, Cr' = Cr - 128), rounded down and clamped.
Status ycbcr_to_rgb(const ConstTensorView& src, const TensorView& dst);

/// torchvision adjust_brightness: blend with black, (uint8)clamp(factor * x). factor >= 0.
/// 1 or 3 channels. Returns InvalidArgument for a negative factor or mismatched views.
Status adjust_brightness(const ConstTensorView& src, const TensorView& dst, double factor);

/// torchvision adjust_contrast: blend with the mean of the (truncated uint8) grayscale image,
/// over the whole image. factor >= 0. 1 or 3 channels.
Status adjust_contrast(const ConstTensorView& src, const TensorView& dst, double factor);

/// torchvision adjust_saturation: blend each pixel with its (truncated uint8) grayscale value.
/// factor >= 0. A 1-channel image is copied (as torchvision returns it unchanged).
Status adjust_saturation(const ConstTensorView& src, const TensorView& dst, double factor);

/// Solarize (Pillow ImageOps.solarize's table, torchvision F.solarize on uint8):
/// x >= threshold ? 255 - x : x for every value; any channel count. threshold 0 inverts every
/// value (F.invert); a threshold above 255 copies. Returns InvalidArgument on mismatched views
/// or a threshold that is NaN.
Status solarize(const ConstTensorView& src, const TensorView& dst, double threshold);

/// torchvision adjust_hue: x / 255 -> HSV (its _rgb2hsv), hue += factor mod 1, -> RGB (its
/// _hsv2rgb), * 255 truncated. factor in [-0.5, 0.5]. A 1-channel image is copied.
Status adjust_hue(const ConstTensorView& src, const TensorView& dst, double hue_factor);

}  // namespace hdl::kernels
HDL_API_END
