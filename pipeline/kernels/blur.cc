#include "pipeline/kernels/blur.h"

#include <cmath>
#include <string>

#include "pipeline/kernels/detail/border.h"

namespace hdl::kernels {
namespace {

// Round half to even and clamp, vectorisable on SSE2 (see resize.cc).
inline uint8_t round_u8(float v) {
  v = v < 0.0f ? 0.0f : v;
  v = v > 255.0f ? 255.0f : v;
  return static_cast<uint8_t>(static_cast<int>((v + 12582912.0f) - 12582912.0f));
}

// Row y of src, reflect-padded by `half` pixels on each side, as floats (interleaved).
template <typename T>
void padded_row(const ConstTensorView& src, int64_t y, int half, float* out) {
  const T* row = static_cast<const T*>(src.data) + y * src.strides[0];
  const int64_t W = src.shape[1], C = src.shape[2];
  for (int64_t x = -half; x < W + half; ++x) {
    const T* px = row + detail::reflect_index(x, W) * src.strides[1];
    float* o = out + (x + half) * C;
    for (int64_t c = 0; c < C; ++c) o[c] = static_cast<float>(px[c * src.strides[2]]);
  }
}

// out[j] = sum_k k[k] * in[j + k * step] over n elements: vectorises over j.
void convolve(const float* __restrict__ in, const float* k, int taps, int64_t step, int64_t n,
              float* __restrict__ out) {
  for (int64_t j = 0; j < n; ++j) out[j] = k[0] * in[j];
  for (int t = 1; t < taps; ++t) {
    const float kt = k[t];
    const float* __restrict__ s = in + t * step;
    for (int64_t j = 0; j < n; ++j) out[j] += kt * s[j];
  }
}

template <typename T>
void horizontal(const ConstTensorView& src, BlurWorkspace& ws) {
  const int64_t H = src.shape[0], W = src.shape[1], C = src.shape[2];
  const int kx = static_cast<int>(ws.kernel_x.size());
  ws.padded_row.resize(static_cast<size_t>((W + kx - 1) * C));
  ws.intermediate.resize(static_cast<size_t>(H * W * C));
  for (int64_t y = 0; y < H; ++y) {
    padded_row<T>(src, y, kx / 2, ws.padded_row.data());
    convolve(ws.padded_row.data(), ws.kernel_x.data(), kx, C, W * C, ws.intermediate.data() + y * W * C);
  }
}

// Vertical pass from the intermediate image; each output row gathers its reflected rows.
void vertical(const TensorView& dst, BlurWorkspace& ws) {
  const int64_t H = dst.shape[0], W = dst.shape[1], C = dst.shape[2], n = W * C;
  const int ky = static_cast<int>(ws.kernel_y.size()), half = ky / 2;
  ws.padded_row.resize(static_cast<size_t>(n));
  float* acc = ws.padded_row.data();
  for (int64_t y = 0; y < H; ++y) {
    for (int t = 0; t < ky; ++t) {
      const float* s = ws.intermediate.data() + detail::reflect_index(y - half + t, H) * n;
      const float k = ws.kernel_y[t];
      if (t == 0) {
        for (int64_t j = 0; j < n; ++j) acc[j] = k * s[j];
      } else {
        for (int64_t j = 0; j < n; ++j) acc[j] += k * s[j];
      }
    }
    for (int64_t x = 0; x < W; ++x) {
      for (int64_t c = 0; c < C; ++c) {
        const int64_t o = y * dst.strides[0] + x * dst.strides[1] + c * dst.strides[2];
        const float v = acc[x * C + c];
        if (dst.dtype == DType::kU8) {
          static_cast<uint8_t*>(dst.data)[o] = round_u8(v);
        } else {
          static_cast<float*>(dst.data)[o] = v;
        }
      }
    }
  }
}

}  // namespace

void gaussian_kernel_1d(int size, double sigma, std::vector<float>& out) {
  out.resize(static_cast<size_t>(size));
  // torch.linspace(-half, half, size) is exact here: the step is 1.
  const float half = static_cast<float>((size - 1) * 0.5);
  const float s = static_cast<float>(sigma);
  float sum = 0;
  for (int i = 0; i < size; ++i) {
    const float x = (-half + static_cast<float>(i)) / s;
    out[i] = std::exp(-0.5f * (x * x));
    sum += out[i];
  }
  for (float& v : out) v /= sum;
}

Status gaussian_blur(const ConstTensorView& src, const TensorView& dst,
                     const GaussianBlurOptions& o, BlurWorkspace& ws) {
  auto ok_type = [](DType t) { return t == DType::kU8 || t == DType::kF32; };
  if (src.ndim() != 3 || src.shape != dst.shape || !ok_type(src.dtype) || !ok_type(dst.dtype) ||
      src.num_elements() == 0) {
    return Status::invalid_argument("gaussian_blur: expected equal non-empty HWC views, got " +
                                    src.shape.to_string() + " -> " + dst.shape.to_string());
  }
  if (o.kernel_x < 1 || o.kernel_y < 1 || o.kernel_x % 2 == 0 || o.kernel_y % 2 == 0 ||
      !(o.sigma_x > 0) || !(o.sigma_y > 0)) {
    return Status::invalid_argument("gaussian_blur: kernel sizes must be odd and positive and "
                                    "sigmas positive, got " + std::to_string(o.kernel_x) + "x" +
                                    std::to_string(o.kernel_y));
  }
  gaussian_kernel_1d(o.kernel_x, o.sigma_x, ws.kernel_x);
  gaussian_kernel_1d(o.kernel_y, o.sigma_y, ws.kernel_y);
  if (src.dtype == DType::kU8) {
    horizontal<uint8_t>(src, ws);
  } else {
    horizontal<float>(src, ws);
  }
  vertical(dst, ws);
  return Status::ok();
}

}  // namespace hdl::kernels
