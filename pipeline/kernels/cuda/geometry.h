// Device geometry kernels: the twins of kernels::crop and kernels::flip (pipeline/kernels/
// crop.h) on CUDA device views. They only move elements, so results equal the CPU kernels'
// exactly.
//
// Thread safety: reentrant; concurrent calls may share `src` but not `dst`.
#pragma once

#include <cstdint>
#include <span>

#include "media/api.h"
#include "media/cuda/stream.h"
#include "media/status.h"
#include "media/tensor.h"

HDL_API_BEGIN
namespace hdl::kernels::cuda {

/// Enqueues on `stream` the window [top, top + H) x [left, left + W) of `src` (HWC, any dtype,
/// any strides) into `dst` ([H, W, C], same dtype and C); pixels outside the image get `fill`
/// (empty: 0; one value; or one per channel, up to 16 channels), converted as the CPU kernel
/// does. InvalidArgument on mismatched views, a bad fill, or views off the stream's device.
Status crop(const ConstTensorView& src, int64_t top, int64_t left, const TensorView& dst,
            hdl::cuda::Stream& stream, std::span<const double> fill = {});

/// Enqueues the left-right and/or up-down flip of `src` (HWC, any dtype) into `dst` (same
/// shape and dtype, not overlapping `src`).
Status flip(const ConstTensorView& src, const TensorView& dst, bool horizontal, bool vertical,
            hdl::cuda::Stream& stream);

}  // namespace hdl::kernels::cuda
HDL_API_END
