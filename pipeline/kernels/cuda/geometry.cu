#include "pipeline/kernels/cuda/geometry.h"

#include <string>

#include "media/cuda/detail/launch.cuh"
#include "pipeline/kernels/detail/elements.h"

namespace hdl::kernels::cuda {
namespace detail = hdl::cuda::detail;  // media/cuda/detail/launch.cuh
namespace {

using detail::View3;

constexpr int kMaxFillChannels = 16;

struct Fill {
  uint64_t bits[kMaxFillChannels];
};

template <typename U>
__global__ void crop_kernel(View3<const U> src, int64_t top, int64_t left, View3<U> dst, Fill fill) {
  const int64_t x = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (x >= dst.n1) return;
  const int64_t sx = left + x;
  for (int64_t y = blockIdx.y * blockDim.y + threadIdx.y; y < dst.n0; y += gridDim.y * blockDim.y) {
    const int64_t sy = top + y;
    const bool inside = sy >= 0 && sy < src.n0 && sx >= 0 && sx < src.n1;
    for (int64_t c = 0; c < dst.n2; ++c) {
      dst.at(y, x, c) = inside ? src.at(sy, sx, c)
                               : static_cast<U>(fill.bits[c < kMaxFillChannels ? c : 0]);
    }
  }
}

template <typename U>
__global__ void flip_kernel(View3<const U> src, View3<U> dst, bool h, bool v) {
  const int64_t x = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (x >= dst.n1) return;
  const int64_t sx = h ? dst.n1 - 1 - x : x;
  for (int64_t y = blockIdx.y * blockDim.y + threadIdx.y; y < dst.n0; y += gridDim.y * blockDim.y) {
    const int64_t sy = v ? dst.n0 - 1 - y : y;
    for (int64_t c = 0; c < dst.n2; ++c) dst.at(y, x, c) = src.at(sy, sx, c);
  }
}

// Calls f.template operator()<U>() with the unsigned type of the element size.
template <typename F>
void by_size(DType t, F&& f) {
  switch (dtype_size(t)) {
    case 1: f.template operator()<uint8_t>(); break;
    case 2: f.template operator()<uint16_t>(); break;
    case 4: f.template operator()<uint32_t>(); break;
    default: f.template operator()<unsigned long long>(); break;
  }
}

}  // namespace

Status crop(const ConstTensorView& src, int64_t top, int64_t left, const TensorView& dst,
            hdl::cuda::Stream& stream, std::span<const double> fill) {
  if (src.ndim() != 3 || dst.ndim() != 3 || src.dtype != dst.dtype || src.shape[2] != dst.shape[2]) {
    return Status::invalid_argument("crop: expected HWC views of one dtype and channel count, got " +
                                    src.shape.to_string() + " -> " + dst.shape.to_string());
  }
  const int64_t C = dst.shape[2];
  if (fill.size() > 1 && (static_cast<int64_t>(fill.size()) != C || C > kMaxFillChannels)) {
    return Status::invalid_argument("crop: fill needs 0, 1 or " + std::to_string(C) +
                                    " values (at most " + std::to_string(kMaxFillChannels) + ")");
  }
  HDL_RETURN_IF_ERROR(detail::check_device("crop", stream, {src.device, dst.device}));
  Fill f{};
  for (int64_t c = 0; c < std::min<int64_t>(C, kMaxFillChannels); ++c) {
    const double v = fill.empty() ? 0.0 : fill[fill.size() == 1 ? 0 : c];
    f.bits[c] = kernels::detail::to_element_bits(v, dst.dtype);
  }
  if (dst.num_elements() == 0) return Status::ok();
  hdl::cuda::detail::DeviceGuard guard(stream.device().index);
  HDL_RETURN_IF_ERROR(guard.status());
  by_size(dst.dtype, [&]<typename U>() {
    crop_kernel<U><<<detail::grid2(dst.shape[1], dst.shape[0]), detail::block2(), 0, detail::raw(stream)>>>(
        detail::view3<const U>(src), top, left, detail::view3<U>(dst), f);
  });
  return detail::launched("crop");
}

Status flip(const ConstTensorView& src, const TensorView& dst, bool horizontal, bool vertical,
            hdl::cuda::Stream& stream) {
  if (src.ndim() != 3 || src.shape != dst.shape || src.dtype != dst.dtype) {
    return Status::invalid_argument("flip: expected equal HWC views, got " + src.shape.to_string() +
                                    " -> " + dst.shape.to_string());
  }
  HDL_RETURN_IF_ERROR(detail::check_device("flip", stream, {src.device, dst.device}));
  if (dst.num_elements() == 0) return Status::ok();
  hdl::cuda::detail::DeviceGuard guard(stream.device().index);
  HDL_RETURN_IF_ERROR(guard.status());
  by_size(dst.dtype, [&]<typename U>() {
    flip_kernel<U><<<detail::grid2(dst.shape[1], dst.shape[0]), detail::block2(), 0, detail::raw(stream)>>>(
        detail::view3<const U>(src), detail::view3<U>(dst), horizontal, vertical);
  });
  return detail::launched("flip");
}

}  // namespace hdl::kernels::cuda
