// Device YUV -> RGB: the twin of kernels::yuv_to_rgb (decoders/kernels/yuv.h) on frames in
// device memory (NVDEC's NV12 / P010 / P016 / YUV444P / YUV444P16 surfaces), the same
// arithmetic per pixel, so the same bytes as the host twin.
//
// Thread safety: reentrant.
#pragma once

#include "decoders/kernels/yuv.h"
#include "media/api.h"
#include "media/cuda/stream.h"
#include "media/status.h"
#include "media/tensor.h"

HDL_API_BEGIN
namespace hdl::kernels::cuda {

/// Enqueues on `stream` the conversion of `f` (its planes in device memory of the stream's
/// device) into `dst` ([H, W, C] uint8 device view, any strides, display orientation after
/// `rotation` degrees clockwise; C = color_channels(color)). `f`'s planes and `dst` must stay
/// alive until the stream passes the work. InvalidArgument as kernels::yuv_to_rgb, or for a
/// view off the stream's device; kUnsupported without CUDA; kInternal when the launch fails.
Status yuv_to_rgb(const YuvFrame& f, const YuvMatrix& m, int rotation, ColorFormat color, const TensorView& dst,
                  hdl::cuda::Stream& stream);

}  // namespace hdl::kernels::cuda
HDL_API_END
