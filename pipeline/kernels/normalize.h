// Normalisation and casting kernels: CropMirrorNormalize (crop + mirror + normalise + layout +
// cast in one pass), normalize, cast.
//
// The arithmetic is torchvision's ToTensor + Normalize in float32, in the same order:
// ((float)x / scale - mean[c]) / std[c]; float16 / bfloat16 outputs are that float32 value
// rounded to nearest even (Tensor.half(), Tensor.bfloat16()). For uint8 input the per-channel
// results of all 256 values are tabulated on the stack first (exact, and faster); where the CPU
// has AVX2, dense 3- or 1-channel rows into float32 compute the same expression in eight lanes
// instead, bit-identically (HDL_DISABLE_AVX2=1 keeps the tables).
//
// Thread safety: pure, reentrant functions; concurrent calls may share `src` but not `dst`.
#pragma once

#include <cstdint>
#include <vector>

#include "media/api.h"
#include "media/shape.h"
#include "media/status.h"
#include "media/tensor.h"

HDL_API_BEGIN
namespace hdl::kernels {

/// out = (x / scale - mean[c]) / std[c], per channel c.
struct NormalizeParams {
  std::vector<float> mean;  ///< per channel, or one value for all; empty: 0
  std::vector<float> std;   ///< per channel, or one value for all; empty: 1
  float scale = 255.0f;     ///< x is divided by this first (255: torchvision ToTensor on uint8)
};

/// What CropMirrorNormalize does besides normalising.
struct CropMirrorNormalizeOptions {
  int64_t top = 0;                ///< window origin in src; the window's size is dst's H, W
  int64_t left = 0;
  bool mirror = false;            ///< flip the window left-right
  float fill = 0;                 ///< source value of window pixels outside the image
  Layout layout = Layout::kCHW;   ///< dst layout: kCHW ([C, H, W]) or kHWC ([H, W, C])
  NormalizeParams norm;           ///< ignored for uint8 output
};

/// Crops the window from `src` (HWC, uint8 or float32, any strides; the window may leave the
/// image, whose outside reads as `fill`, like torchvision F.crop's zero padding), mirrors it if asked,
/// normalises and writes it as `dst`'s dtype: float32, float16 or bfloat16 (normalised), or
/// uint8 (no normalisation: crop + mirror + layout only), into `dst` (any strides, e.g. a slot
/// of a batch). Returns InvalidArgument if shapes or dtypes do not fit, or mean/std have
/// neither 0, 1 nor C values.
Status crop_mirror_normalize(const ConstTensorView& src, const TensorView& dst,
                             const CropMirrorNormalizeOptions& options);

/// Normalises `src` (3-D, uint8 or float32) into `dst` (same shape; float32, float16 or
/// bfloat16); the channel is dimension `channel_axis` (0 for CHW, 2 for HWC).
/// Returns InvalidArgument on mismatched views or mean/std sizes.
Status normalize(const ConstTensorView& src, const TensorView& dst, const NormalizeParams& params,
                 int channel_axis = 2);

/// Converts `src` to `dst`'s dtype (same shape, up to 8 dims, any strides, any dtypes).
/// Float -> integer truncates toward zero like torch's .to(), and saturates out-of-range values
/// (undefined in torch); NaN -> 0. Float -> float16/bfloat16 rounds to nearest even.
/// Returns InvalidArgument on a shape mismatch.
Status cast(const ConstTensorView& src, const TensorView& dst);

}  // namespace hdl::kernels
HDL_API_END
