// Device resize. The arithmetic mirrors pipeline/kernels/detail/resize_passes.h pixel for pixel
// (see resize.h); compiled with -fmad=false so that a * b + c is not contracted.
#include "pipeline/kernels/cuda/resize.h"

#include "media/cuda/detail/launch.cuh"

namespace hdl::kernels::cuda {
namespace detail = hdl::cuda::detail;  // media/cuda/detail/launch.cuh
namespace {

using detail::View3;

struct Axis {
  const float* w;
  const int32_t* start;
  int taps;
  int64_t out;
};

// How a pass writes its float result.
enum class Store { kFloat, kRoundEven, kRoundHalfUp, kPilIntermediate };

__device__ float clamp255(float v) {
  v = v < 0.0f ? 0.0f : v;
  return v > 255.0f ? 255.0f : v;
}

template <typename TOut, Store kStore>
__device__ void store(TOut& out, float v) {
  if constexpr (kStore == Store::kFloat) {
    out = v;
  } else if constexpr (kStore == Store::kRoundEven) {
    out = static_cast<TOut>(__float2int_rn(clamp255(v)));  // NaN -> 0, as the CPU's packs
  } else if constexpr (kStore == Store::kRoundHalfUp) {
    out = static_cast<TOut>(static_cast<int>(clamp255(v) + 0.5f));
  } else {
    out = static_cast<TOut>(static_cast<float>(static_cast<int>(clamp255(v) + 0.5f)));
  }
}

// Horizontal pass over rows [0, src.n0): dst(y, x, c) = sum_k w[x][k] * src(y, start[x] + k, c).
// `pairs`: the CPU's dense 3-channel order (even and odd taps in two chains, summed at the end).
template <typename TIn, typename TOut, Store kStore>
__global__ void h_pass(View3<const TIn> src, Axis ax, bool pairs, View3<TOut> dst) {
  const int64_t x = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (x >= ax.out) return;
  const float* w = ax.w + x * ax.taps;
  const int64_t x0 = ax.start[x];
  for (int64_t y = blockIdx.y * blockDim.y + threadIdx.y; y < src.n0; y += gridDim.y * blockDim.y) {
    for (int64_t c = 0; c < src.n2; ++c) {
      float acc;
      if (pairs) {
        float even = 0.0f, odd = 0.0f;
        int k = 0;
        for (; k + 1 < ax.taps; k += 2) {
          even += w[k] * static_cast<float>(src.at(y, x0 + k, c));
          odd += w[k + 1] * static_cast<float>(src.at(y, x0 + k + 1, c));
        }
        if (k < ax.taps) even += w[k] * static_cast<float>(src.at(y, x0 + k, c));
        acc = even + odd;
      } else {
        acc = 0.0f;
        for (int k = 0; k < ax.taps; ++k) acc += w[k] * static_cast<float>(src.at(y, x0 + k, c));
      }
      store<TOut, kStore>(dst.at(y, x, c), acc);
    }
  }
}

// Vertical pass: dst(y, x, c) = w[y][0] * src(start[y], x, c) + sum_{k >= 1} ... (the CPU's
// v_row order: the first product, then the others added one by one).
template <typename TIn, typename TOut, Store kStore>
__global__ void v_pass(View3<const TIn> src, Axis ay, View3<TOut> dst) {
  const int64_t x = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (x >= src.n1) return;
  for (int64_t y = blockIdx.y * blockDim.y + threadIdx.y; y < ay.out; y += gridDim.y * blockDim.y) {
    const float* w = ay.w + y * ay.taps;
    const int64_t y0 = ay.start[y];
    for (int64_t c = 0; c < src.n2; ++c) {
      float acc = w[0] * static_cast<float>(src.at(y0, x, c));
      for (int k = 1; k < ay.taps; ++k) acc += w[k] * static_cast<float>(src.at(y0 + k, x, c));
      store<TOut, kStore>(dst.at(y, x, c), acc);
    }
  }
}

template <typename TIn, typename TOut, Store kStore>
void launch_h(const View3<const TIn>& src, const Axis& ax, View3<TOut> dst, cudaStream_t s) {
  const bool pairs = src.n2 == 3 && src.dense();
  h_pass<TIn, TOut, kStore><<<detail::grid2(ax.out, src.n0), detail::block2(), 0, s>>>(src, ax, pairs, dst);
}

template <typename TIn, typename TOut, Store kStore>
void launch_v(const View3<const TIn>& src, const Axis& ay, View3<TOut> dst, cudaStream_t s) {
  v_pass<TIn, TOut, kStore><<<detail::grid2(src.n1, ay.out), detail::block2(), 0, s>>>(src, ay, dst);
}

// The final pass's store, by output dtype and Pillow semantics.
template <typename TIn, bool kHorizontal>
void launch_final(const View3<const TIn>& src, const Axis& a, const TensorView& dst, bool pil,
                  cudaStream_t s) {
  auto go = [&]<typename TOut, Store kStore>() {
    if constexpr (kHorizontal) launch_h<TIn, TOut, kStore>(src, a, detail::view3<TOut>(dst), s);
    else launch_v<TIn, TOut, kStore>(src, a, detail::view3<TOut>(dst), s);
  };
  if (dst.dtype == DType::kF32) go.template operator()<float, Store::kFloat>();
  else if (pil) go.template operator()<uint8_t, Store::kRoundHalfUp>();
  else go.template operator()<uint8_t, Store::kRoundEven>();
}

template <typename TIn>
void run(const ConstTensorView& src_view, const TensorView& dst, const ResizePasses& p, Axis ax,
         Axis ay, float* mid, cudaStream_t s) {
  const View3<const TIn> src = detail::view3<const TIn>(src_view);
  const int64_t C = src.n2;
  if (!p.y.resampled) return launch_final<TIn, true>(src, ax, dst, p.pil, s);
  if (!p.x.resampled) return launch_final<TIn, false>(src, ay, dst, p.pil, s);
  if (p.vertical_first && !p.pil) {
    const View3<float> m{mid, ay.out, src.n1, C, src.n1 * C, C, 1};
    launch_v<TIn, float, Store::kFloat>(src, ay, m, s);
    return launch_final<float, true>(View3<const float>{m.data, m.n0, m.n1, m.n2, m.s0, m.s1, m.s2}, ax, dst, p.pil, s);
  }
  const View3<float> m{mid, src.n0, ax.out, C, ax.out * C, C, 1};
  if (p.pil) launch_h<TIn, float, Store::kPilIntermediate>(src, ax, m, s);
  else launch_h<TIn, float, Store::kFloat>(src, ax, m, s);
  launch_final<float, false>(View3<const float>{m.data, m.n0, m.n1, m.n2, m.s0, m.s1, m.s2}, ay, dst, p.pil, s);
}

Status check_views(const ConstTensorView& src, const TensorView& dst) {
  auto ok_type = [](DType t) { return t == DType::kU8 || t == DType::kF32; };
  if (src.ndim() != 3 || dst.ndim() != 3 || !ok_type(src.dtype) || !ok_type(dst.dtype) ||
      src.shape[2] != dst.shape[2] || src.num_elements() == 0 || dst.num_elements() == 0) {
    return Status::invalid_argument("resize: expected HWC uint8/float32 views with equal channels, got " +
                                    src.shape.to_string() + " " + dtype_name(src.dtype) + " -> " +
                                    dst.shape.to_string() + " " + dtype_name(dst.dtype));
  }
  return Status::ok();
}

// Workspace slots.
constexpr int kWeightsX = 0, kStartX = 1, kWeightsY = 2, kStartY = 3, kIntermediate = 4;

Result<Axis> upload_axis(const ResizePass& a, int wslot, int sslot, DeviceWorkspace& ws,
                         hdl::cuda::Stream& stream) {
  if (!a.resampled) return Axis{nullptr, nullptr, 0, a.out};
  HDL_ASSIGN_OR_RETURN(void* w, ws.upload(wslot, a.weights.data(), a.weights.size() * sizeof(float), stream));
  HDL_ASSIGN_OR_RETURN(void* st, ws.upload(sslot, a.start.data(), a.start.size() * sizeof(int32_t), stream));
  return Axis{static_cast<const float*>(w), static_cast<const int32_t*>(st), a.taps, a.out};
}

}  // namespace

Status resize(const ConstTensorView& src, const TensorView& dst, const ResizeOptions& options,
              DeviceWorkspace& ws, hdl::cuda::Stream& stream) {
  HDL_RETURN_IF_ERROR(check_views(src, dst));
  HDL_RETURN_IF_ERROR(detail::check_device("resize", stream, {src.device, dst.device}));
  ResizePasses& passes = ws.resize_passes;
  HDL_RETURN_IF_ERROR(make_resize_passes({src.shape[0], src.shape[1]}, {dst.shape[0], dst.shape[1]},
                                         options, dst.dtype, passes));
  hdl::cuda::detail::DeviceGuard guard(stream.device().index);
  HDL_RETURN_IF_ERROR(guard.status());
  HDL_ASSIGN_OR_RETURN(Axis ax, upload_axis(passes.x, kWeightsX, kStartX, ws, stream));
  HDL_ASSIGN_OR_RETURN(Axis ay, upload_axis(passes.y, kWeightsY, kStartY, ws, stream));
  float* mid = nullptr;
  if (const int64_t n = passes.intermediate_elements(src.shape[2]); n > 0) {
    HDL_ASSIGN_OR_RETURN(void* m, ws.buffer(kIntermediate, static_cast<size_t>(n) * sizeof(float)));
    mid = static_cast<float*>(m);
  }
  const cudaStream_t s = detail::raw(stream);
  if (src.dtype == DType::kU8) run<uint8_t>(src, dst, passes, ax, ay, mid, s);
  else run<float>(src, dst, passes, ax, ay, mid, s);
  return detail::launched("resize");
}

}  // namespace hdl::kernels::cuda
