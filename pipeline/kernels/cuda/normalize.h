// Device CropMirrorNormalize over a whole batch in one launch: the twin of
// kernels::crop_mirror_normalize (pipeline/kernels/normalize.h) for uint8 HWC samples of any
// sizes, each with its own crop window and mirror flag, written as one [N, C, H, W] (or
// [N, H, W, C]) float32 / float16 / bfloat16 / uint8 batch: the last step before the model.
//
// The per-channel results of all 256 input values (and of the fill) are computed on the host
// by make_cmn_table (host_tables.h) with the CPU kernel's float32 expression and float16 / bfloat16
// rounding, so device results equal the CPU kernel's bit for bit by construction.
//
// Thread safety: reentrant; the workspace is per stream.
#pragma once

#include <cstdint>
#include <span>

#include "media/api.h"
#include "media/cuda/stream.h"
#include "media/status.h"
#include "media/tensor.h"
#include "pipeline/kernels/cuda/workspace.h"
#include "pipeline/kernels/normalize.h"

HDL_API_BEGIN
namespace hdl::kernels::cuda {

/// Where one sample's window starts, and whether it is mirrored (left-right).
struct CmnWindow {
  int64_t top = 0;
  int64_t left = 0;
  bool mirror = false;
};

/// What is common to the batch.
struct CmnBatchOptions {
  float fill = 0;                ///< source value of window pixels outside the image
  Layout layout = Layout::kCHW;  ///< dst is [N, C, H, W] (kCHW) or [N, H, W, C] (kHWC)
  NormalizeParams norm;          ///< ignored for uint8 output
};

/// Enqueues on `stream`, for every i, the window of srcs[i] (HWC uint8, any strides and size,
/// on the stream's device) at windows[i], of dst's H x W, mirrored if asked, normalised, into
/// dst[i] (any strides). Returns InvalidArgument when the counts differ, N > 65535, a source
/// is not HWC uint8 with dst's channel count, dst's rank/dtype/layout do not fit, or
/// mean/std have neither 0, 1 nor C values; kUnsupported without CUDA.
Status crop_mirror_normalize(std::span<const ConstTensorView> srcs, std::span<const CmnWindow> windows,
                             const TensorView& dst, const CmnBatchOptions& options,
                             DeviceWorkspace& workspace, hdl::cuda::Stream& stream);

}  // namespace hdl::kernels::cuda
HDL_API_END
