// Device colour kernels; the arithmetic is pipeline/kernels/color.cc's, expression by expression.
#include "pipeline/kernels/cuda/color.h"

#include <string>

#include "media/cuda/detail/launch.cuh"

namespace hdl::kernels::cuda {
namespace detail = hdl::cuda::detail;  // media/cuda/detail/launch.cuh
namespace {

using detail::View3;
using U8In = View3<const uint8_t>;
using U8Out = View3<uint8_t>;

__device__ uint8_t clamp_trunc(float v) {
  v = v < 0.0f ? 0.0f : v;
  v = v > 255.0f ? 255.0f : v;
  return static_cast<uint8_t>(v);
}

__device__ float gray_f(float r, float g, float b) { return (0.2989f * r + 0.587f * g) + 0.114f * b; }

// The operation on one pixel: reads all of its channels before writing any (in-place safe).
enum class Op { kGray, kBrightness, kContrast, kSaturation, kHue, kCopy };

struct Params {
  float a = 0, b = 0;                       // blend weights: ratio and 1 - ratio as float32
  float shift = 0;                          // hue
  const unsigned long long* sum = nullptr;  // contrast: sum of the grayscale image
  float pixels = 1;                         // contrast: H * W as float32
};

__device__ void hue_pixel(float r, float g, float bl, float shift, uint8_t* out) {
  // _rgb2hsv
  const float maxc = fmaxf(fmaxf(r, g), bl), minc = fminf(fminf(r, g), bl);
  const bool eqc = maxc == minc;
  const float cr = maxc - minc;
  const float s = cr / (eqc ? 1.0f : maxc);
  const float crd = eqc ? 1.0f : cr;
  const float rc = (maxc - r) / crd, gc = (maxc - g) / crd, bc = (maxc - bl) / crd;
  const float hr = maxc == r ? bc - gc : 0.0f;
  const float hg = (maxc == g && maxc != r) ? (2.0f + rc) - bc : 0.0f;
  const float hb = (maxc != g && maxc != r) ? (4.0f + gc) - rc : 0.0f;
  float h = fmodf(((hr + hg) + hb) / 6.0f + 1.0f, 1.0f);
  // torch's remainder
  h = fmodf(h + shift, 1.0f);
  if (h != 0 && h < 0) h += 1.0f;
  // _hsv2rgb
  const float i = floorf(h * 6.0f);
  const float f = h * 6.0f - i;
  const int k = static_cast<int>(i) % 6;
  const float v = maxc;
  const float p = fminf(fmaxf(v * (1.0f - s), 0.0f), 1.0f);
  const float q = fminf(fmaxf(v * (1.0f - s * f), 0.0f), 1.0f);
  const float t = fminf(fmaxf(v * (1.0f - s * (1.0f - f)), 0.0f), 1.0f);
  const float rr[6] = {v, q, p, p, t, v}, gg[6] = {t, v, v, q, p, p}, bb[6] = {p, p, t, v, v, q};
  out[0] = static_cast<uint8_t>(rr[k] * 255.0f);
  out[1] = static_cast<uint8_t>(gg[k] * 255.0f);
  out[2] = static_cast<uint8_t>(bb[k] * 255.0f);
}

template <Op kOp>
__global__ void pixel_kernel(U8In src, U8Out dst, Params prm) {
  const int64_t x = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (x >= src.n1) return;
  const int64_t C = src.n2;
  for (int64_t y = blockIdx.y * blockDim.y + threadIdx.y; y < src.n0; y += gridDim.y * blockDim.y) {
    uint8_t in[3] = {0, 0, 0}, out[3] = {0, 0, 0};
    for (int64_t c = 0; c < C && c < 3; ++c) in[c] = src.at(y, x, c);
    const float r = in[0], g = in[1], b = in[2];
    int64_t n_out = C;
    if constexpr (kOp == Op::kGray) {
      const uint8_t l = C == 3 ? static_cast<uint8_t>(gray_f(r, g, b)) : in[0];
      out[0] = out[1] = out[2] = l;
      n_out = dst.n2;
    } else if constexpr (kOp == Op::kBrightness) {
      for (int c = 0; c < 3; ++c) out[c] = clamp_trunc(prm.a * static_cast<float>(in[c]) + prm.b * 0.0f);
    } else if constexpr (kOp == Op::kContrast) {
      const float mean = static_cast<float>(static_cast<long long>(*prm.sum)) / prm.pixels;
      for (int c = 0; c < 3; ++c) out[c] = clamp_trunc(prm.a * static_cast<float>(in[c]) + prm.b * mean);
    } else if constexpr (kOp == Op::kSaturation) {
      const float gray = static_cast<float>(static_cast<uint8_t>(gray_f(r, g, b)));
      for (int c = 0; c < 3; ++c) out[c] = clamp_trunc(prm.a * static_cast<float>(in[c]) + prm.b * gray);
    } else if constexpr (kOp == Op::kHue) {
      hue_pixel(r / 255.0f, g / 255.0f, b / 255.0f, prm.shift, out);
    } else {
      for (int c = 0; c < 3; ++c) out[c] = in[c];
    }
    for (int64_t c = 0; c < n_out && c < 3; ++c) dst.at(y, x, c) = out[c];
  }
}

// Sum over the image of the truncated grayscale value (or the single channel): per-thread
// sums, a warp reduction, one 64-bit atomic per warp. Integer sums: exact in any order.
__global__ void gray_sum_kernel(U8In src, unsigned long long* sum) {
  const int64_t x = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  unsigned long long local = 0;
  if (x < src.n1) {
    for (int64_t y = blockIdx.y * blockDim.y + threadIdx.y; y < src.n0; y += gridDim.y * blockDim.y) {
      if (src.n2 == 3) {
        local += static_cast<uint8_t>(gray_f(src.at(y, x, 0), src.at(y, x, 1), src.at(y, x, 2)));
      } else {
        local += src.at(y, x, 0);
      }
    }
  }
  for (int off = 16; off > 0; off /= 2) local += __shfl_down_sync(0xffffffffu, local, off);
  if ((threadIdx.x & 31) == 0) atomicAdd(sum, local);
}

template <typename E>
__global__ void swap_kernel(View3<const E> src, View3<E> dst) {
  const int64_t x = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (x >= src.n1) return;
  for (int64_t y = blockIdx.y * blockDim.y + threadIdx.y; y < src.n0; y += gridDim.y * blockDim.y) {
    const E r = src.at(y, x, 0), g = src.at(y, x, 1), b = src.at(y, x, 2);
    const E a = src.n2 == 4 ? src.at(y, x, 3) : E{};
    dst.at(y, x, 0) = b, dst.at(y, x, 1) = g, dst.at(y, x, 2) = r;
    if (src.n2 == 4) dst.at(y, x, 3) = a;
  }
}

Status check_u8(const char* what, const ConstTensorView& src, const TensorView& dst, bool any_dst_c) {
  const bool ok = src.ndim() == 3 && dst.ndim() == 3 && src.dtype == DType::kU8 &&
                  dst.dtype == DType::kU8 && src.shape[0] == dst.shape[0] &&
                  src.shape[1] == dst.shape[1] && (src.shape[2] == 1 || src.shape[2] == 3) &&
                  (any_dst_c ? (dst.shape[2] == 1 || dst.shape[2] == 3) : dst.shape[2] == src.shape[2]);
  if (!ok) {
    return Status::invalid_argument(std::string(what) + ": expected 1- or 3-channel HWC uint8 views, got " +
                                    src.shape.to_string() + " " + dtype_name(src.dtype) + " -> " +
                                    dst.shape.to_string() + " " + dtype_name(dst.dtype));
  }
  return Status::ok();
}

Status check_factor(const char* what, double f) {
  if (!(f >= 0)) return Status::invalid_argument(std::string(what) + ": factor must be >= 0");
  return Status::ok();
}

template <Op kOp>
Status launch(const char* what, const ConstTensorView& src, const TensorView& dst, const Params& p,
              hdl::cuda::Stream& stream) {
  HDL_RETURN_IF_ERROR(detail::check_device(what, stream, {src.device, dst.device}));
  if (src.num_elements() == 0) return Status::ok();
  hdl::cuda::detail::DeviceGuard guard(stream.device().index);
  HDL_RETURN_IF_ERROR(guard.status());
  pixel_kernel<kOp><<<detail::grid2(src.shape[1], src.shape[0]), detail::block2(), 0, detail::raw(stream)>>>(
      detail::view3<const uint8_t>(src), detail::view3<uint8_t>(dst), p);
  return detail::launched(what);
}

// torchvision _blend's weights: ratio and 1 - ratio in double, then float32.
Params blend(double ratio) {
  Params p;
  p.a = static_cast<float>(ratio), p.b = static_cast<float>(1.0 - ratio);
  return p;
}

}  // namespace

Status swap_red_blue(const ConstTensorView& src, const TensorView& dst, hdl::cuda::Stream& stream) {
  if (src.ndim() != 3 || src.shape != dst.shape || src.dtype != dst.dtype ||
      (src.shape[2] != 3 && src.shape[2] != 4)) {
    return Status::invalid_argument("swap_red_blue: expected equal 3/4-channel HWC views, got " +
                                    src.shape.to_string() + " -> " + dst.shape.to_string());
  }
  HDL_RETURN_IF_ERROR(detail::check_device("swap_red_blue", stream, {src.device, dst.device}));
  if (src.num_elements() == 0) return Status::ok();
  hdl::cuda::detail::DeviceGuard guard(stream.device().index);
  HDL_RETURN_IF_ERROR(guard.status());
  auto go = [&]<typename E>() {
    swap_kernel<E><<<detail::grid2(src.shape[1], src.shape[0]), detail::block2(), 0, detail::raw(stream)>>>(
        detail::view3<const E>(src), detail::view3<E>(dst));
  };
  switch (dtype_size(src.dtype)) {
    case 1: go.template operator()<uint8_t>(); break;
    case 2: go.template operator()<uint16_t>(); break;
    case 4: go.template operator()<uint32_t>(); break;
    default: go.template operator()<unsigned long long>(); break;
  }
  return detail::launched("swap_red_blue");
}

Status rgb_to_grayscale(const ConstTensorView& src, const TensorView& dst, hdl::cuda::Stream& stream) {
  HDL_RETURN_IF_ERROR(check_u8("rgb_to_grayscale", src, dst, true));
  return launch<Op::kGray>("rgb_to_grayscale", src, dst, {}, stream);
}

Status adjust_brightness(const ConstTensorView& src, const TensorView& dst, double factor,
                         hdl::cuda::Stream& stream) {
  HDL_RETURN_IF_ERROR(check_u8("adjust_brightness", src, dst, false));
  HDL_RETURN_IF_ERROR(check_factor("adjust_brightness", factor));
  return launch<Op::kBrightness>("adjust_brightness", src, dst, blend(factor), stream);
}

Status adjust_contrast(const ConstTensorView& src, const TensorView& dst, double factor,
                       DeviceWorkspace& ws, hdl::cuda::Stream& stream) {
  HDL_RETURN_IF_ERROR(check_u8("adjust_contrast", src, dst, false));
  HDL_RETURN_IF_ERROR(check_factor("adjust_contrast", factor));
  HDL_RETURN_IF_ERROR(detail::check_device("adjust_contrast", stream, {src.device, dst.device}));
  if (src.num_elements() == 0) return Status::ok();
  hdl::cuda::detail::DeviceGuard guard(stream.device().index);
  HDL_RETURN_IF_ERROR(guard.status());
  HDL_ASSIGN_OR_RETURN(void* sum, ws.buffer(5, sizeof(unsigned long long)));
  HDL_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(sum, 0, sizeof(unsigned long long), detail::raw(stream)));
  gray_sum_kernel<<<detail::grid2(src.shape[1], src.shape[0]), detail::block2(), 0, detail::raw(stream)>>>(
      detail::view3<const uint8_t>(src), static_cast<unsigned long long*>(sum));
  HDL_RETURN_IF_ERROR(detail::launched("adjust_contrast (mean)"));
  Params p = blend(factor);
  p.sum = static_cast<const unsigned long long*>(sum);
  p.pixels = static_cast<float>(src.shape[0] * src.shape[1]);
  return launch<Op::kContrast>("adjust_contrast", src, dst, p, stream);
}

Status adjust_saturation(const ConstTensorView& src, const TensorView& dst, double factor,
                         hdl::cuda::Stream& stream) {
  HDL_RETURN_IF_ERROR(check_u8("adjust_saturation", src, dst, false));
  HDL_RETURN_IF_ERROR(check_factor("adjust_saturation", factor));
  if (src.shape[2] == 1) return launch<Op::kCopy>("adjust_saturation", src, dst, {}, stream);
  return launch<Op::kSaturation>("adjust_saturation", src, dst, blend(factor), stream);
}

Status adjust_hue(const ConstTensorView& src, const TensorView& dst, double hue_factor,
                  hdl::cuda::Stream& stream) {
  HDL_RETURN_IF_ERROR(check_u8("adjust_hue", src, dst, false));
  if (!(hue_factor >= -0.5 && hue_factor <= 0.5)) {
    return Status::invalid_argument("adjust_hue: hue_factor must be in [-0.5, 0.5]");
  }
  if (src.shape[2] == 1) return launch<Op::kCopy>("adjust_hue", src, dst, {}, stream);
  Params p;
  p.shift = static_cast<float>(hue_factor);
  return launch<Op::kHue>("adjust_hue", src, dst, p, stream);
}

}  // namespace hdl::kernels::cuda
