// Gaussian blur matching torchvision 0.14's F.gaussian_blur on uint8 tensors: a float32 kernel
// built as torchvision builds it (linspace, exp, normalised), reflect padding (torch 'reflect',
// edge not repeated), output rounded half to even and clamped. torchvision convolves with the
// 2-D outer-product kernel; this kernel does the same sum separably (horizontal then vertical
// pass in float32), which differs only by float rounding.
//
// Thread safety: pure and reentrant; a BlurWorkspace is per-thread scratch (not shared).
#pragma once

#include <cstdint>
#include <vector>

#include "media/api.h"
#include "media/status.h"
#include "media/tensor.h"

HDL_API_BEGIN
namespace hdl::kernels {

/// Kernel sizes (odd, >= 1) and standard deviations (> 0) per axis, x first like torchvision's
/// kernel_size=(kx, ky), sigma=(sx, sy).
struct GaussianBlurOptions {
  int kernel_x = 3;
  int kernel_y = 3;
  double sigma_x = 1.0;
  double sigma_y = 1.0;
};

/// Scratch kept per thread and reused: kernels, padded row, the horizontally blurred image.
struct BlurWorkspace {
  std::vector<float> kernel_x, kernel_y;
  std::vector<float> padded_row;
  std::vector<float> intermediate;
};

/// torchvision _get_gaussian_kernel1d(size, sigma) in float32, into `out` (resized to size).
void gaussian_kernel_1d(int size, double sigma, std::vector<float>& out);

/// Blurs `src` (HWC uint8 or float32, any channels and strides) into `dst` (same shape; uint8 or
/// float32, float32 output unrounded). Pads reflect further than torch allows when the kernel
/// exceeds the image. Returns InvalidArgument for even or non-positive sizes, sigma <= 0 or
/// mismatched views. `src` and `dst` must not overlap.
Status gaussian_blur(const ConstTensorView& src, const TensorView& dst,
                     const GaussianBlurOptions& options, BlurWorkspace& workspace);

}  // namespace hdl::kernels
HDL_API_END
