// torchvision 0.14's tensor-path versions of the auto-augment ops that differ from Pillow's:
// AugMix turns a PIL image into a uint8 tensor before augmenting, so its ops are
// functional_tensor's. (Posterize, Solarize and Equalize are the same on both paths: use
// augment.h; Brightness, Color and Contrast are color.h's adjust_*.)
//
// - autocontrast_tensor: per channel float32 (x - min) * ((1 / (max - min)) * 255), clamped,
//   truncated.
// - adjust_sharpness: blend with the 3x3 [1 1 1; 1 5 1; 1 1 1] / 13 blur (float32, rounded half
//   to even; the one-pixel border is the image's own), float32 blend, truncated.
// - affine_grid_sample: F_t.affine / F_t.rotate: torchvision's _gen_affine_grid (float32 grid
//   from the inverse matrix, normalised by the image size; (x r0 + y r1) + r2 unfused, as torch's
//   bmm gives it) and grid_sample (align_corners=False, zero padding) as torch 1.13's AVX2
//   kernel computes it: the unnormalisation and the bilinear sum are fused multiply-adds,
//   nearest rounds half to even; then the optional fill mask, rounded half to even.
//
// Views are HWC uint8 with 1 or 3 channels, any strides; `src` and `dst` must not overlap
// (autocontrast_tensor allows dst == src). InvalidArgument for other views.
//
// Thread safety: pure, reentrant functions; concurrent calls may share `src` but not `dst`.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "media/api.h"
#include "media/status.h"
#include "media/tensor.h"
#include "pipeline/kernels/warp.h"

HDL_API_BEGIN
namespace hdl::kernels {

/// torch.linspace(start, end, steps)[index] in float32 as torch 1.13 computes it on an AVX2 CPU
/// (halves from each end with fused multiply-adds, 8-lane vectors in blocks of 16 with unfused
/// lane offsets, a scalar tail); `start` when steps == 1. Precondition: 0 <= index < steps.
float torch_linspace(float start, float end, int64_t steps, int64_t index);

/// torchvision F_t.autocontrast on uint8 (a flat channel is unchanged).
Status autocontrast_tensor(const ConstTensorView& src, const TensorView& dst);

/// torchvision F_t.adjust_sharpness(img, factor), factor >= 0 (images with a side <= 2 are
/// copied, as torchvision returns them).
Status adjust_sharpness(const ConstTensorView& src, const TensorView& dst, double factor);

/// torchvision F_t.affine(img, matrix, interpolation, fill) with `matrix` from
/// _get_inverse_affine_matrix in torch's convention (centre of the image at 0). `filter`:
/// kNearest or kBilinear. `fill`: empty for None (zeros outside, no mask), else 1 value or one
/// per channel.
Status affine_grid_sample(const ConstTensorView& src, const TensorView& dst, const std::array<double, 6>& matrix,
                          WarpFilter filter, std::span<const double> fill = {});

}  // namespace hdl::kernels
HDL_API_END
