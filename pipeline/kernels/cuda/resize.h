// Device resize: the twin of kernels::resize (pipeline/kernels/resize.h) on CUDA device views.
//
// Same weight tables (computed on the host by the CPU kernel's compute_resize_weights and
// uploaded), same axis-skipping rule, same pass order (the CPU cost model), same summation
// order per pixel (two accumulator chains for dense 3-channel rows, one otherwise), float32
// arithmetic without fused multiply-adds (the kernels are compiled with -fmad=false) and the
// same rounding (half to even; half up for box / lanczos to uint8, Pillow's). The intended
// result is therefore bit-identical to the CPU kernel; the tests allow max 1 grey level on
// <= 0.1% of values (docs/CUDA.md), because that has not been verified on a GPU yet.
//
// Thread safety: reentrant; the workspace is per stream.
#pragma once

#include "media/api.h"
#include "media/cuda/stream.h"
#include "media/status.h"
#include "media/tensor.h"
#include "pipeline/kernels/cuda/workspace.h"
#include "pipeline/kernels/resize.h"

HDL_API_BEGIN
namespace hdl::kernels::cuda {

/// Enqueues on `stream` the resize of `src` (HWC [H, W, C], uint8 or float32, any strides, on
/// the stream's device) into `dst` (HWC [out_h, out_w, C], uint8 or float32, any strides, same
/// device). Returns before the work is done; `src` and `dst` must stay alive until the stream
/// passes it. Returns InvalidArgument for the views kernels::resize refuses, for views not on
/// the stream's device or an invalid stream; kUnsupported without CUDA; kResourceExhausted
/// when scratch cannot be allocated; kInternal when the launch fails.
Status resize(const ConstTensorView& src, const TensorView& dst, const ResizeOptions& options,
              DeviceWorkspace& workspace, hdl::cuda::Stream& stream);

}  // namespace hdl::kernels::cuda
HDL_API_END
