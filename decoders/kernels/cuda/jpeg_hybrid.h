// Device hybrid JPEG decode: the pixel half of a batch (decoders/kernels/jpeg_hybrid.h) on the
// GPU, the twin of kernels::jpeg_decode_batch_host: the same functions per block and per
// pixel, so the same bytes.
//
// Thread safety: reentrant.
#pragma once

#include "decoders/kernels/jpeg_hybrid.h"
#include "media/api.h"
#include "media/cuda/stream.h"
#include "media/status.h"

HDL_API_BEGIN
namespace hdl::kernels::cuda {

/// Enqueues on `stream` the decode of `batch`, whose buffers (images, quant, coefs, samples,
/// out) are device memory of the stream's device: one launch for the IDCT of every block of
/// every image (8 threads per block: its column pass, then its row pass), one for every output
/// pixel (upsampling, colour, orientation). `host_images`: the batch's geometry in host memory,
/// checked here (check_jpeg_batch) before anything is launched. The buffers must stay alive
/// until the stream passes the work. kUnsupported without CUDA; kInvalidArgument for a batch
/// that does not fit its buffers or a stream that is not a CUDA stream; kInternal when a
/// launch fails.
Status jpeg_decode_batch(const JpegBatchView& batch, const JpegImageGeometry* host_images, hdl::cuda::Stream& stream);

}  // namespace hdl::kernels::cuda
HDL_API_END
