// Builds without CUDA: the decoder's device kernel exists and says so.
#include "decoders/kernels/cuda/yuv.h"

namespace hdl::kernels::cuda {

Status yuv_to_rgb(const YuvFrame&, const YuvMatrix&, int, ColorFormat, const TensorView&, hdl::cuda::Stream&) {
  return Status::unsupported("not available: built without CUDA");
}

}  // namespace hdl::kernels::cuda
