#include "pipeline/kernels/tensor_augment.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace hdl::kernels {
namespace {

Status check(const char* what, const ConstTensorView& src, const TensorView& dst) {
  if (src.ndim() != 3 || dst.ndim() != 3 || src.dtype != DType::kU8 || dst.dtype != DType::kU8 ||
      src.shape != dst.shape || (src.shape[2] != 1 && src.shape[2] != 3)) {
    return Status::invalid_argument(std::string(what) + ": expected HWC uint8 views with 1 or 3 channels of one shape, got " +
                                    src.shape.to_string() + " -> " + dst.shape.to_string());
  }
  return Status::ok();
}

inline const uint8_t* px(const ConstTensorView& v, int64_t y, int64_t x) {
  return static_cast<const uint8_t*>(v.data) + y * v.strides[0] + x * v.strides[1];
}
inline uint8_t* px(const TensorView& v, int64_t y, int64_t x) {
  return static_cast<uint8_t*>(v.data) + y * v.strides[0] + x * v.strides[1];
}

// torch.round then .to(uint8) of a value torch keeps within [0, 255] up to rounding.
inline uint8_t round_u8(float v) {
  const float r = std::nearbyint(v);
  return static_cast<uint8_t>(r < 0.0f ? 0.0f : r > 255.0f ? 255.0f : r);
}

}  // namespace

float torch_linspace(float start, float end, int64_t steps, int64_t index) {
  if (steps == 1) return start;
  const float step = (end - start) / static_cast<float>(steps - 1);
  const int64_t halfway = steps / 2;
  auto scalar = [&](int64_t i) {
    return i < halfway ? std::fmaf(step, static_cast<float>(i), start)
                       : std::fmaf(-step, static_cast<float>(steps - i - 1), end);
  };
  // Blocks of two 8-lane vectors, each lane base + lane * step (rounded twice); a scalar tail.
  const int64_t vectorised = steps - steps % 16;
  if (index >= vectorised) return scalar(index);
  const int64_t lane = index % 8;
  const float base = scalar(index - lane);
  const float offset = static_cast<float>(lane) * step;
  return base + offset;
}

Status autocontrast_tensor(const ConstTensorView& src, const TensorView& dst) {
  HDL_RETURN_IF_ERROR(check("autocontrast_tensor", src, dst));
  const int64_t H = src.shape[0], W = src.shape[1], C = src.shape[2];
  float lo[3], scale[3];
  for (int64_t c = 0; c < C; ++c) {
    int mn = 255, mx = 0;
    for (int64_t y = 0; y < H; ++y) {
      for (int64_t x = 0; x < W; ++x) {
        const int v = px(src, y, x)[c * src.strides[2]];
        mn = std::min(mn, v), mx = std::max(mx, v);
      }
    }
    // scale = 255.0 / (max - min): a Python scalar over a tensor is Tensor.__rtruediv__, i.e.
    // reciprocal() * 255 in float32; inf (a flat channel) -> min 0, scale 1.
    const float s = (1.0f / static_cast<float>(mx - mn)) * 255.0f;
    lo[c] = std::isfinite(s) ? static_cast<float>(mn) : 0.0f;
    scale[c] = std::isfinite(s) ? s : 1.0f;
  }
  for (int64_t y = 0; y < H; ++y) {
    for (int64_t x = 0; x < W; ++x) {
      const uint8_t* s = px(src, y, x);
      uint8_t* d = px(dst, y, x);
      for (int64_t c = 0; c < C; ++c) {
        float v = (static_cast<float>(s[c * src.strides[2]]) - lo[c]) * scale[c];
        v = std::clamp(v, 0.0f, 255.0f);
        d[c * dst.strides[2]] = static_cast<uint8_t>(v);
      }
    }
  }
  return Status::ok();
}

Status adjust_sharpness(const ConstTensorView& src, const TensorView& dst, double factor) {
  HDL_RETURN_IF_ERROR(check("adjust_sharpness", src, dst));
  if (!(factor >= 0)) return Status::invalid_argument("adjust_sharpness: factor must be >= 0");
  const int64_t H = src.shape[0], W = src.shape[1], C = src.shape[2], sc = src.strides[2];
  if (H <= 2 || W <= 2) {
    copy(src, dst);
    return Status::ok();
  }
  // kernel = ones(3, 3) with 5 at the centre, divided by its float32 sum (13).
  const float k1 = 1.0f / 13.0f, k5 = 5.0f / 13.0f;
  // _blend: ratio * img + (1 - ratio) * degenerate, ratio and 1 - ratio float32 scalars.
  const float a = static_cast<float>(factor), b = static_cast<float>(1.0 - factor);
  for (int64_t y = 0; y < H; ++y) {
    for (int64_t x = 0; x < W; ++x) {
      const uint8_t* p = px(src, y, x);
      uint8_t* d = px(dst, y, x);
      const bool border = y == 0 || x == 0 || y == H - 1 || x == W - 1;
      for (int64_t c = 0; c < C; ++c) {
        const uint8_t v = p[c * sc];
        float degenerate = v;
        if (!border) {
          float acc = 0.0f;
          for (int dy = -1; dy <= 1; ++dy) {
            for (int dx = -1; dx <= 1; ++dx) {
              acc += static_cast<float>(px(src, y + dy, x + dx)[c * sc]) * (dy == 0 && dx == 0 ? k5 : k1);
            }
          }
          degenerate = static_cast<float>(round_u8(acc));
        }
        float out = a * static_cast<float>(v) + b * degenerate;
        out = std::clamp(out, 0.0f, 255.0f);
        d[c * dst.strides[2]] = static_cast<uint8_t>(out);
      }
    }
  }
  return Status::ok();
}

Status affine_grid_sample(const ConstTensorView& src, const TensorView& dst, const std::array<double, 6>& matrix,
                          WarpFilter filter, std::span<const double> fill) {
  HDL_RETURN_IF_ERROR(check("affine_grid_sample", src, dst));
  const int64_t H = src.shape[0], W = src.shape[1], C = src.shape[2], sc = src.strides[2];
  if (filter == WarpFilter::kBicubic) return Status::invalid_argument("affine_grid_sample: nearest or bilinear");
  if (!fill.empty() && fill.size() != 1 && static_cast<int64_t>(fill.size()) != C)
    return Status::invalid_argument("affine_grid_sample: fill must have 1 value or one per channel");
  // _gen_affine_grid: theta in float32, its transpose divided by [0.5 w, 0.5 h].
  float t[6];
  for (int k = 0; k < 6; ++k) t[k] = static_cast<float>(matrix[k]);
  const float hw = static_cast<float>(0.5 * static_cast<double>(W)), hh = static_cast<float>(0.5 * static_cast<double>(H));
  const float r00 = t[0] / hw, r10 = t[1] / hw, r20 = t[2] / hw;  // x column
  const float r01 = t[3] / hh, r11 = t[4] / hh, r21 = t[5] / hh;  // y column
  // grid_sample's unnormalisation with align_corners=False: (g + 1) * (size / 2) - 0.5, one
  // fused multiply-add in torch's AVX2 kernel (as is its bilinear sum below).
  const float sx = static_cast<float>(W) / 2, sy = static_cast<float>(H) / 2;
  const float x_start = static_cast<float>(-static_cast<double>(W) * 0.5 + 0.5);
  const float x_end = static_cast<float>(static_cast<double>(W) * 0.5 + 0.5 - 1);
  const float y_start = static_cast<float>(-static_cast<double>(H) * 0.5 + 0.5);
  const float y_end = static_cast<float>(static_cast<double>(H) * 0.5 + 0.5 - 1);
  std::vector<float> xs(static_cast<size_t>(W));
  for (int64_t j = 0; j < W; ++j) xs[j] = torch_linspace(x_start, x_end, W, j);
  auto value = [&](int64_t yy, int64_t xx, int64_t c) -> float {
    return yy >= 0 && yy < H && xx >= 0 && xx < W ? static_cast<float>(px(src, yy, xx)[c * sc]) : 0.0f;
  };
  auto fill_of = [&](int64_t c) { return static_cast<float>(fill.size() == 1 ? fill[0] : fill[c]); };
  for (int64_t i = 0; i < H; ++i) {
    const float gyv = torch_linspace(y_start, y_end, H, i);
    for (int64_t j = 0; j < W; ++j) {
      const float gx = xs[j] * r00 + gyv * r10 + r20;
      const float gy = xs[j] * r01 + gyv * r11 + r21;
      const float ix = std::fmaf(gx + 1.0f, sx, -0.5f), iy = std::fmaf(gy + 1.0f, sy, -0.5f);
      uint8_t* d = px(dst, i, j);
      if (filter == WarpFilter::kNearest) {
        const float fx = std::nearbyint(ix), fy = std::nearbyint(iy);
        const bool inside = fx >= 0 && fx < W && fy >= 0 && fy < H;
        for (int64_t c = 0; c < C; ++c) {
          const float v = inside ? value(static_cast<int64_t>(fy), static_cast<int64_t>(fx), c) : 0.0f;
          d[c * dst.strides[2]] = round_u8(!inside && !fill.empty() ? fill_of(c) : v);
        }
        continue;
      }
      const float x0f = std::floor(ix), y0f = std::floor(iy);
      const float w = ix - x0f, n = iy - y0f, e = 1.0f - w, s = 1.0f - n;
      const float nw = s * e, ne = s * w, sw = n * e, se = n * w;
      // Far outside, the corners are zeros; clamp before converting to keep the indices sane.
      const float lim = static_cast<float>(std::max(H, W)) + 2.0f;
      const auto x0 = static_cast<int64_t>(std::clamp(x0f, -lim, lim)), y0 = static_cast<int64_t>(std::clamp(y0f, -lim, lim));
      auto in = [&](int64_t yy, int64_t xx) { return yy >= 0 && yy < H && xx >= 0 && xx < W ? 1.0f : 0.0f; };
      auto blend = [&](float a, float b, float c, float d) {
        return std::fmaf(d, se, std::fmaf(c, sw, std::fmaf(b, ne, a * nw)));
      };
      const float mask = blend(in(y0, x0), in(y0, x0 + 1), in(y0 + 1, x0), in(y0 + 1, x0 + 1));
      for (int64_t c = 0; c < C; ++c) {
        float v = blend(value(y0, x0, c), value(y0, x0 + 1, c), value(y0 + 1, x0, c), value(y0 + 1, x0 + 1, c));
        if (!fill.empty()) v = v * mask + (1.0f - mask) * fill_of(c);
        d[c * dst.strides[2]] = round_u8(v);
      }
    }
  }
  return Status::ok();
}

}  // namespace hdl::kernels
