// Pillow's GaussianBlur (ImageFilter.GaussianBlur(radius) on an 8-bit image), bit-exact: the
// blur self-supervised recipes (DINO, BYOL, MoCo v3) apply to PIL images with a random radius.
// Pillow approximates the Gaussian by `passes` (3) extended box blurs per axis (Gwosdek et al.,
// SSVM 2011): an integer box radius plus a fractional weight for the two far pixels, in 8.24
// fixed point, edge pixels repeated; all horizontal passes, then all vertical ones, each
// rounding to uint8. The box radius comes from the Gaussian radius in float32 arithmetic, as
// Pillow computes it.
//
// Thread safety: pure and reentrant; a PilBlurWorkspace is per-thread scratch.
#pragma once

#include <cstdint>
#include <vector>

#include "media/api.h"
#include "media/status.h"
#include "media/tensor.h"

HDL_API_BEGIN
namespace hdl::kernels {

/// Pillow's _gaussian_blur_radius: the extended box radius whose `passes` box blurs have the
/// variance of a Gaussian of standard deviation `radius` (float32 arithmetic).
float pil_box_radius(float radius, int passes);

/// Scratch kept per thread and reused: one line of pixels in, one out.
struct PilBlurWorkspace {
  std::vector<uint8_t> line_in, line_out;
};

/// Blurs `src` (HWC uint8, 1 to 4 channels, any strides) into `dst` (same shape, HWC uint8;
/// may be `src`) as Pillow's Image.filter(ImageFilter.GaussianBlur(radius)) with 3 passes.
/// radius 0 copies. InvalidArgument for other dtypes or shapes, or a negative radius.
Status pil_gaussian_blur(const ConstTensorView& src, const TensorView& dst, float radius, PilBlurWorkspace& ws);

}  // namespace hdl::kernels
HDL_API_END
