// Device YUV -> RGB: decoders/kernels/yuv.h's per-pixel function, one thread per output pixel.
#include "decoders/kernels/cuda/yuv.h"

#include "media/cuda/detail/launch.cuh"

namespace hdl::kernels::cuda {
namespace detail = hdl::cuda::detail;  // media/cuda/detail/launch.cuh
namespace {

using detail::View3;

template <int kChannels, bool kBgr>
__global__ void yuv_kernel(YuvFrame f, YuvMatrix m, int32_t rotation, View3<uint8_t> dst) {
  const int64_t ox = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (ox >= dst.n1) return;
  for (int64_t oy = blockIdx.y * blockDim.y + threadIdx.y; oy < dst.n0; oy += gridDim.y * blockDim.y) {
    int64_t sy, sx;
    rotated_source(rotation, f.width, f.height, oy, ox, &sy, &sx);
    uint8_t px[3];
    yuv_pixel(f, m, sx, sy, kChannels == 1, px);
    if constexpr (kChannels == 1) {
      dst.at(oy, ox, 0) = px[0];
    } else {
      dst.at(oy, ox, 0) = px[kBgr ? 2 : 0];
      dst.at(oy, ox, 1) = px[1];
      dst.at(oy, ox, 2) = px[kBgr ? 0 : 2];
    }
  }
}

}  // namespace

Status yuv_to_rgb(const YuvFrame& f, const YuvMatrix& m, int rotation, ColorFormat color, const TensorView& dst,
                  hdl::cuda::Stream& stream) {
  HDL_RETURN_IF_ERROR(check_yuv_to_rgb(f, rotation, color, dst));
  HDL_RETURN_IF_ERROR(detail::check_device("yuv_to_rgb", stream, {dst.device}));
  const View3<uint8_t> out = detail::view3<uint8_t>(dst);
  const dim3 grid = detail::grid2(out.n1, out.n0), block = detail::block2();
  cudaStream_t s = detail::raw(stream);
  switch (color) {
    case ColorFormat::kGray: yuv_kernel<1, false><<<grid, block, 0, s>>>(f, m, rotation, out); break;
    case ColorFormat::kBGR: yuv_kernel<3, true><<<grid, block, 0, s>>>(f, m, rotation, out); break;
    default: yuv_kernel<3, false><<<grid, block, 0, s>>>(f, m, rotation, out); break;
  }
  return detail::launched("yuv_to_rgb");
}

}  // namespace hdl::kernels::cuda
