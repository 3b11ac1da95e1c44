// Host-side preparation for the device kernels: everything a device kernel needs that can be
// computed on the CPU, computed exactly as the CPU kernels compute it, so that device and CPU
// results agree by construction. Compiled in every build and tested without a GPU.
//
// - Resize: the per-axis weight tables come from pipeline/kernels/detail/resize_weights.h's
//   compute_resize_weights (the CPU kernel's own tables), with the CPU kernel's rules for
//   skipping an unchanged axis, for the order of the two passes, and for Pillow's uint8
//   semantics (box, lanczos).
// - CropMirrorNormalize on uint8: per channel, the 256 output elements (in the output dtype's
//   bits) and the fill element, from the CPU kernel's float32 expression and its float16 /
//   bfloat16 rounding; the device kernel only looks them up.
//
// Thread safety: pure functions; ResizePasses and CmnTable are values (one per thread, reused to
// avoid allocation).
#pragma once

#include <cstdint>
#include <vector>

#include "media/api.h"
#include "media/status.h"
#include "pipeline/kernels/normalize.h"
#include "pipeline/kernels/resize.h"

HDL_API_BEGIN
namespace hdl::kernels::cuda {

/// One axis of a resize: output i = sum_k weights[i * taps + k] * input[start[i] + k].
struct ResizePass {
  bool resampled = false;        ///< false: the axis keeps its size and the pass is skipped
  int taps = 0;
  int64_t in = 0, out = 0;
  std::vector<float> weights;    ///< [out, taps]
  std::vector<int32_t> start;    ///< [out]
};

/// Everything the device resize needs besides the pixels.
struct ResizePasses {
  ResizePass x, y;
  bool pil = false;             ///< Pillow uint8 semantics: horizontal first, intermediate and
                                ///< output rounded half up (box / lanczos to uint8)
  bool vertical_first = false;  ///< pass order when both axes are resampled (never under pil)
  /// Floats of the intermediate image between the passes (0 when only one pass runs).
  int64_t intermediate_elements(int64_t channels) const;
};

/// Fills `passes` (reusing its vectors) for resizing an in_h x in_w image to out_h x out_w with
/// `options` into `out_dtype` (uint8 or float32). Returns InvalidArgument for a size < 1, a
/// dimension over INT32_MAX or another dtype.
Status make_resize_passes(SizeHW in, SizeHW out, const ResizeOptions& options, DType out_dtype,
                          ResizePasses& passes);

/// The per-channel lookup table of CropMirrorNormalize on uint8 input.
struct CmnTable {
  DType dtype = DType::kF32;  ///< output dtype: float32, float16, bfloat16 or uint8
  int channels = 0;
  /// [channels][257] elements of dtype (little-endian bits, element size dtype_size(dtype)):
  /// entries 0..255 are the outputs for those input values, entry 256 the fill element.
  std::vector<uint8_t> bytes;
  /// Element (c, v) as float (tests and debugging). v == 256 is the fill.
  float value(int c, int v) const;
};

/// Fills `table` (reusing its vector) for `channels` channels of uint8 input written as
/// `dtype`: ((float)v / scale - mean[c]) / std[c] in float32, rounded to nearest even for
/// float16 / bfloat16 (the CPU kernel's arithmetic); uint8 output is the identity (fill
/// saturated and truncated). Returns InvalidArgument for another dtype, channels < 1, or
/// mean/std with neither 0, 1 nor `channels` values.
Status make_cmn_table(int channels, DType dtype, const NormalizeParams& norm, float fill,
                      CmnTable& table);

}  // namespace hdl::kernels::cuda
HDL_API_END
