// Builds without CUDA: the decoder's device kernels exist and say so.
#include "decoders/kernels/cuda/jpeg_hybrid.h"
#include "decoders/kernels/cuda/yuv.h"

namespace hdl::kernels::cuda {

Status yuv_to_rgb(const YuvFrame&, const YuvMatrix&, int, ColorFormat, const TensorView&, hdl::cuda::Stream&) {
  return Status::unsupported("not available: built without CUDA");
}

Status jpeg_decode_batch(const JpegBatchView&, const JpegImageGeometry*, hdl::cuda::Stream&) {
  return Status::unsupported("not available: built without CUDA");
}

}  // namespace hdl::kernels::cuda
