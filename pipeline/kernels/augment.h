// Auto-augment kernels: the pixel operations torchvision's AutoAugment, RandAugment and
// TrivialAugmentWide apply to PIL images, with Pillow 9.4's arithmetic (torchvision hands PIL
// images to ImageOps, ImageEnhance and Image.transform / Image.rotate):
//
// - lookup-table ops (ImageOps.posterize, invert, autocontrast, equalize, timm's solarize_add;
//   solarize is color.h's):
//   integer histograms and Python's own lookup-table formulas, exact;
// - ImageEnhance (Brightness, Color, Contrast, Sharpness): Image.blend(degenerate, image, factor)
//   with a float32 factor, truncated and clipped as Pillow's Blend.c; the degenerate images are
//   Pillow's: black, convert("L") (ITU-R 601-2 in 16.16 fixed point, rounded), the rounded mean
//   of that L image, and the SMOOTH 3x3 filter (float32, borders copied);
// - geometry (warp.h).
//
// Views are HWC uint8 with 1 ("L") or 3 ("RGB") channels, any strides. Pointwise and
// lookup-table kernels accept dst == src exactly (in place); enhance_sharpness needs
// non-overlapping views. Errors: InvalidArgument for other dtypes, channel counts or mismatched
// shapes.
//
// Thread safety: pure, reentrant functions; concurrent calls may share `src` but not `dst`.
#pragma once

#include "media/api.h"
#include "media/status.h"
#include "media/tensor.h"

HDL_API_BEGIN
namespace hdl::kernels {

/// ImageOps.posterize(img, bits): every value ANDed with a mask keeping its top `bits` bits
/// (0 <= bits <= 8; 0 makes the image black).
Status posterize(const ConstTensorView& src, const TensorView& dst, int bits);

/// timm's solarize_add(img, add, thresh): Image.point with the table v < threshold ?
/// min(255, v + add) : v (0 <= add <= 255; any threshold).
Status solarize_add(const ConstTensorView& src, const TensorView& dst, int add, int threshold);

/// ImageOps.invert: 255 - v.
Status invert(const ConstTensorView& src, const TensorView& dst);

/// ImageOps.autocontrast(img) (cutoff 0, no ignore): per channel, the lowest and highest values
/// present map to 0 and 255 (lut = int(v * 255 / (hi - lo) - lo * 255 / (hi - lo)), in double,
/// clamped); a channel with one value is unchanged.
Status autocontrast(const ConstTensorView& src, const TensorView& dst);

/// ImageOps.equalize(img): per channel, Pillow's histogram equalisation (step = (n - count of the
/// highest value present) // 255; unchanged when step is 0 or one value is present).
Status equalize(const ConstTensorView& src, const TensorView& dst);

/// ImageEnhance.Brightness(img).enhance(factor): blend of black and the image.
Status enhance_brightness(const ConstTensorView& src, const TensorView& dst, double factor);

/// ImageEnhance.Color(img).enhance(factor): blend of convert("L") and the image (1 channel:
/// unchanged).
Status enhance_color(const ConstTensorView& src, const TensorView& dst, double factor);

/// ImageEnhance.Contrast(img).enhance(factor): blend of a flat image at int(mean(L) + 0.5) and
/// the image.
Status enhance_contrast(const ConstTensorView& src, const TensorView& dst, double factor);

/// ImageEnhance.Sharpness(img).enhance(factor): blend of filter(SMOOTH) and the image. Images
/// smaller than 3x3 are unchanged by the filter, as in Pillow. `src` and `dst` must not overlap.
Status enhance_sharpness(const ConstTensorView& src, const TensorView& dst, double factor);

/// Image.blend(a, b, alpha): a + alpha * (b - a) per value in float32 with a float32 alpha,
/// truncated (and clipped, for alpha outside [0, 1]), as Pillow's Blend.c. Views of one shape;
/// `dst` may be `a` or `b`.
Status blend_images(const ConstTensorView& a, const ConstTensorView& b, const TensorView& dst, double alpha);

}  // namespace hdl::kernels
HDL_API_END
