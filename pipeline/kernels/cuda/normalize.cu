#include "pipeline/kernels/cuda/normalize.h"

#include <string>

#include "media/cuda/detail/launch.cuh"

namespace hdl::kernels::cuda {
namespace detail = hdl::cuda::detail;  // media/cuda/detail/launch.cuh
namespace {

struct Sample {
  const uint8_t* data;
  int64_t h, w, sy, sx, sc;
  int64_t top, left;
  int64_t mirror;
};

// dst element (n, y, x, c) sits at data[n * sn + y * sy + x * sx + c * sc].
template <typename O>
struct Out4 {
  O* data;
  int64_t h, w, c;
  int64_t sn, sy, sx, sc;
};

template <typename O>
__global__ void cmn_kernel(const Sample* samples, const O* table, Out4<O> out) {
  const int64_t x = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (x >= out.w) return;
  const Sample s = samples[blockIdx.z];
  const int64_t col = s.left + (s.mirror ? out.w - 1 - x : x);
  O* base = out.data + blockIdx.z * out.sn + x * out.sx;
  for (int64_t y = blockIdx.y * blockDim.y + threadIdx.y; y < out.h; y += gridDim.y * blockDim.y) {
    const int64_t row = s.top + y;
    const bool inside = row >= 0 && row < s.h && col >= 0 && col < s.w;
    const uint8_t* p = s.data + (inside ? row * s.sy + col * s.sx : 0);
    for (int64_t c = 0; c < out.c; ++c) {
      base[y * out.sy + c * out.sc] = table[c * 257 + (inside ? p[c * s.sc] : 256)];
    }
  }
}

Status check(std::span<const ConstTensorView> srcs, std::span<const CmnWindow> windows,
             const TensorView& dst, const CmnBatchOptions& o) {
  if (srcs.size() != windows.size() || dst.ndim() != 4 ||
      dst.shape[0] != static_cast<int64_t>(srcs.size()) || srcs.size() > 65535) {
    return Status::invalid_argument("crop_mirror_normalize: " + std::to_string(srcs.size()) +
                                    " samples, " + std::to_string(windows.size()) +
                                    " windows, dst " + dst.shape.to_string() + " (at most 65535)");
  }
  if (o.layout != Layout::kCHW && o.layout != Layout::kHWC) {
    return Status::invalid_argument("crop_mirror_normalize: layout must be CHW or HWC");
  }
  const int64_t C = o.layout == Layout::kCHW ? dst.shape[1] : dst.shape[3];
  for (const ConstTensorView& s : srcs) {
    if (s.ndim() != 3 || s.dtype != DType::kU8 || s.shape[2] != C) {
      return Status::invalid_argument("crop_mirror_normalize: source " + s.shape.to_string() + " " +
                                      dtype_name(s.dtype) + " is not HWC uint8 with " +
                                      std::to_string(C) + " channels");
    }
  }
  return Status::ok();
}

}  // namespace

Status crop_mirror_normalize(std::span<const ConstTensorView> srcs, std::span<const CmnWindow> windows,
                             const TensorView& dst, const CmnBatchOptions& o, DeviceWorkspace& ws,
                             hdl::cuda::Stream& stream) {
  HDL_RETURN_IF_ERROR(check(srcs, windows, dst, o));
  HDL_RETURN_IF_ERROR(detail::check_device("crop_mirror_normalize", stream, {dst.device}));
  for (const ConstTensorView& s : srcs) {
    HDL_RETURN_IF_ERROR(detail::check_device("crop_mirror_normalize", stream, {s.device}));
  }
  const bool chw = o.layout == Layout::kCHW;
  const int64_t C = chw ? dst.shape[1] : dst.shape[3];
  const int64_t H = chw ? dst.shape[2] : dst.shape[1], W = chw ? dst.shape[3] : dst.shape[2];
  HDL_RETURN_IF_ERROR(make_cmn_table(static_cast<int>(C), dst.dtype, o.norm, o.fill, ws.cmn_table));
  if (srcs.empty() || dst.num_elements() == 0) return Status::ok();
  // One upload: the sample descriptors, then the table (8-byte aligned).
  const size_t desc_bytes = srcs.size() * sizeof(Sample);
  ws.host_params.resize(desc_bytes + ws.cmn_table.bytes.size());
  auto* samples = reinterpret_cast<Sample*>(ws.host_params.data());
  for (size_t i = 0; i < srcs.size(); ++i) {
    const ConstTensorView& s = srcs[i];
    samples[i] = {static_cast<const uint8_t*>(s.data), s.shape[0], s.shape[1], s.strides[0], s.strides[1],
                  s.strides[2], windows[i].top, windows[i].left, windows[i].mirror ? 1 : 0};
  }
  std::copy(ws.cmn_table.bytes.begin(), ws.cmn_table.bytes.end(), ws.host_params.begin() + desc_bytes);
  hdl::cuda::detail::DeviceGuard guard(stream.device().index);
  HDL_RETURN_IF_ERROR(guard.status());
  HDL_ASSIGN_OR_RETURN(void* params, ws.upload(0, ws.host_params.data(), ws.host_params.size(), stream));
  const auto* d_samples = static_cast<const Sample*>(params);
  const void* d_table = static_cast<const uint8_t*>(params) + desc_bytes;
  const int64_t sn = dst.strides[0];
  const int64_t sy = chw ? dst.strides[2] : dst.strides[1], sx = chw ? dst.strides[3] : dst.strides[2];
  const int64_t sc = chw ? dst.strides[1] : dst.strides[3];
  const dim3 grid = detail::grid2(W, H, static_cast<int64_t>(srcs.size()));
  auto go = [&]<typename O>() {
    const Out4<O> out{static_cast<O*>(dst.data), H, W, C, sn, sy, sx, sc};
    cmn_kernel<O><<<grid, detail::block2(), 0, detail::raw(stream)>>>(d_samples, static_cast<const O*>(d_table), out);
  };
  switch (dtype_size(dst.dtype)) {
    case 1: go.template operator()<uint8_t>(); break;
    case 2: go.template operator()<uint16_t>(); break;
    default: go.template operator()<uint32_t>(); break;
  }
  return detail::launched("crop_mirror_normalize");
}

}  // namespace hdl::kernels::cuda
