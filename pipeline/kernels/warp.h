// Geometric warps with Pillow 9.4's semantics, for the auto-augment policies: torchvision hands
// PIL images to Image.transform(size, AFFINE, ...) (F.affine, with the matrix of its
// _get_inverse_affine_matrix) and to Image.rotate (F.rotate).
//
// Pillow samples output pixel (x, y) at the input point a0 (x + .5) + a1 (y + .5) + a2,
// a3 (x + .5) + a4 (y + .5) + a5. Nearest neighbour takes the pixel that point falls in, through
// the same engine Pillow picks: a per-axis table for pure scaling/translation (a1 == a3 == 0),
// 16.16 fixed point when the image corners map within +-32768, else double steps. Bilinear
// and bicubic (Pillow's cubic, a = -1) interpolate in double between pixel centres, clamping at
// the borders, and truncate (bicubic clipped to [0, 255]); a point outside [0, w) x [0, h)
// keeps the fill colour. Output size equals input size (expand=False).
//
// Views are HWC uint8, 1 or 3 channels, any strides; `src` and `dst` must not overlap.
//
// Thread safety: pure, reentrant functions; concurrent calls may share `src` but not `dst`.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "media/api.h"
#include "media/status.h"
#include "media/tensor.h"

HDL_API_BEGIN
namespace hdl::kernels {

/// Pillow's resampling filters for transforms (Image.NEAREST, BILINEAR, BICUBIC).
enum class WarpFilter { kNearest, kBilinear, kBicubic };

/// Image.transform(img.size, Image.AFFINE, coeffs, filter, fillcolor=fill): `coeffs` map output
/// to input (Pillow's convention). `fill` has 1 value or one per channel (empty: 0).
/// InvalidArgument for mismatched views or a fill of another length.
Status affine_transform(const ConstTensorView& src, const TensorView& dst, const std::array<double, 6>& coeffs,
                        WarpFilter filter, std::span<const uint8_t> fill = {});

/// Image.rotate(degrees, filter, expand=False, center=None, fillcolor=fill): counter-clockwise
/// about the image centre; angles that are multiples of 180 (and of 90 on square images) are
/// exact transposes as in Pillow, others go through Pillow's matrix (cos/sin rounded to 15
/// decimals) and affine_transform.
Status rotate(const ConstTensorView& src, const TensorView& dst, double degrees, WarpFilter filter,
              std::span<const uint8_t> fill = {});

/// torchvision's _get_inverse_affine_matrix(center, angle, translate, scale, shear) (inverted,
/// angles in degrees): the coefficients F.affine passes to Image.transform for a PIL image.
std::array<double, 6> inverse_affine_matrix(std::array<double, 2> center, double angle,
                                            std::array<double, 2> translate, double scale,
                                            std::array<double, 2> shear);

}  // namespace hdl::kernels
HDL_API_END
