#include "pipeline/kernels/color.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "pipeline/kernels/detail/elements.h"
#include "pipeline/kernels/detail/pixels.h"

namespace hdl::kernels {
namespace {

using detail::for_each_pixel;

Status check_u8(const char* what, const ConstTensorView& src, const TensorView& dst,
                int64_t src_c, int64_t dst_c) {
  if (src.ndim() != 3 || dst.ndim() != 3 || src.dtype != DType::kU8 || dst.dtype != DType::kU8 ||
      src.shape[0] != dst.shape[0] || src.shape[1] != dst.shape[1] ||
      (src_c && src.shape[2] != src_c) || (dst_c && dst.shape[2] != dst_c)) {
    return Status::invalid_argument(std::string(what) + ": unexpected views " +
                                    src.shape.to_string() + " " + dtype_name(src.dtype) + " -> " +
                                    dst.shape.to_string() + " " + dtype_name(dst.dtype));
  }
  return Status::ok();
}

// .clamp(0, 255).to(uint8): truncation toward zero.
inline uint8_t clamp_trunc(float v) {
  v = v < 0.0f ? 0.0f : v;
  v = v > 255.0f ? 255.0f : v;
  return static_cast<uint8_t>(v);
}

// Pillow's YCbCr conversions shift fixed-point sums right: floor, then clamp.
inline uint8_t floor_clamp(float v) { return clamp_trunc(std::floor(v)); }

// torchvision's grayscale value as float32, before truncation.
inline float gray_f(const uint8_t* p, int64_t sc) {
  return (0.2989f * static_cast<float>(p[0]) + 0.587f * static_cast<float>(p[sc])) +
         0.114f * static_cast<float>(p[2 * sc]);
}

// torchvision _blend(img, other, ratio) for one value: ratio and 1 - ratio are double in Python
// and become float32 scalars in torch.
struct Blend {
  float a, b;
  explicit Blend(double ratio) : a(static_cast<float>(ratio)), b(static_cast<float>(1.0 - ratio)) {}
  uint8_t operator()(uint8_t x, float other) const { return clamp_trunc(a * static_cast<float>(x) + b * other); }
};

Status check_factor(const char* what, double f) {
  if (!(f >= 0)) return Status::invalid_argument(std::string(what) + ": factor must be >= 0");
  return Status::ok();
}

Status copy_u8(const ConstTensorView& src, const TensorView& dst) {
  for_each_pixel(src, dst, [&](const uint8_t* s, int64_t sc, uint8_t* d, int64_t dc) {
    for (int64_t c = 0; c < src.shape[2]; ++c) d[c * dc] = s[c * sc];
  });
  return Status::ok();
}

struct Hsv {
  float h, s, v;
};

// torchvision _rgb2hsv on values already divided by 255.
Hsv rgb2hsv(float r, float g, float b) {
  const float maxc = std::max({r, g, b}), minc = std::min({r, g, b});
  const bool eqc = maxc == minc;
  const float cr = maxc - minc;
  const float s = cr / (eqc ? 1.0f : maxc);
  const float crd = eqc ? 1.0f : cr;
  const float rc = (maxc - r) / crd, gc = (maxc - g) / crd, bc = (maxc - b) / crd;
  const float hr = maxc == r ? bc - gc : 0.0f;
  const float hg = (maxc == g && maxc != r) ? (2.0f + rc) - bc : 0.0f;
  const float hb = (maxc != g && maxc != r) ? (4.0f + gc) - rc : 0.0f;
  const float h = (hr + hg) + hb;
  return {std::fmod(h / 6.0f + 1.0f, 1.0f), s, maxc};
}

// torchvision _hsv2rgb, times 255 and truncated.
void hsv2rgb_u8(const Hsv& x, uint8_t* d, int64_t dc) {
  const float i = std::floor(x.h * 6.0f);
  const float f = x.h * 6.0f - i;
  const int k = static_cast<int>(i) % 6;
  const float v = x.v;
  const float p = std::clamp(v * (1.0f - x.s), 0.0f, 1.0f);
  const float q = std::clamp(v * (1.0f - x.s * f), 0.0f, 1.0f);
  const float t = std::clamp(v * (1.0f - x.s * (1.0f - f)), 0.0f, 1.0f);
  const float r[6] = {v, q, p, p, t, v}, g[6] = {t, v, v, q, p, p}, b[6] = {p, p, t, v, v, q};
  d[0] = static_cast<uint8_t>(r[k] * 255.0f);
  d[dc] = static_cast<uint8_t>(g[k] * 255.0f);
  d[2 * dc] = static_cast<uint8_t>(b[k] * 255.0f);
}

}  // namespace

Status swap_red_blue(const ConstTensorView& src, const TensorView& dst) {
  if (src.ndim() != 3 || src.shape != dst.shape || src.dtype != dst.dtype ||
      (src.shape[2] != 3 && src.shape[2] != 4)) {
    return Status::invalid_argument("swap_red_blue: expected equal 3/4-channel HWC views, got " +
                                    src.shape.to_string() + " -> " + dst.shape.to_string());
  }
  Status st;
  detail::dispatch_by_size(src.dtype, [&]<typename E>() {
    const E* sp = static_cast<const E*>(src.data);
    E* dp = static_cast<E*>(dst.data);
    for (int64_t y = 0; y < src.shape[0]; ++y) {
      for (int64_t x = 0; x < src.shape[1]; ++x) {
        const E* s = sp + detail::offset3(src, y, x, 0);
        E* d = dp + detail::offset3(dst, y, x, 0);
        const int64_t sc = src.strides[2], dc = dst.strides[2];
        const E r = s[0], g = s[sc], b = s[2 * sc];
        const E a = src.shape[2] == 4 ? s[3 * sc] : E{};
        d[0] = b;
        d[dc] = g;
        d[2 * dc] = r;
        if (src.shape[2] == 4) d[3 * dc] = a;
      }
    }
  });
  return st;
}

Status rgb_to_grayscale(const ConstTensorView& src, const TensorView& dst) {
  HDL_RETURN_IF_ERROR(check_u8("rgb_to_grayscale", src, dst, 0, 0));
  const int64_t dst_c = dst.shape[2];
  if ((src.shape[2] != 1 && src.shape[2] != 3) || (dst_c != 1 && dst_c != 3)) {
    return Status::invalid_argument("rgb_to_grayscale: 1 or 3 channels in and out");
  }
  const bool rgb = src.shape[2] == 3;
  for_each_pixel(src, dst, [&](const uint8_t* s, int64_t sc, uint8_t* d, int64_t dc) {
    const uint8_t l = rgb ? static_cast<uint8_t>(gray_f(s, sc)) : s[0];
    for (int64_t c = 0; c < dst_c; ++c) d[c * dc] = l;
  });
  return Status::ok();
}

Status rgb_to_ycbcr(const ConstTensorView& src, const TensorView& dst) {
  HDL_RETURN_IF_ERROR(check_u8("rgb_to_ycbcr", src, dst, 3, 3));
  for_each_pixel(src, dst, [](const uint8_t* s, int64_t sc, uint8_t* d, int64_t dc) {
    const float r = s[0], g = s[sc], b = s[2 * sc];
    d[0] = floor_clamp(0.299f * r + 0.587f * g + 0.114f * b);
    d[dc] = floor_clamp(128.0f - 0.168736f * r - 0.331264f * g + 0.5f * b);
    d[2 * dc] = floor_clamp(128.0f + 0.5f * r - 0.418688f * g - 0.081312f * b);
  });
  return Status::ok();
}

Status ycbcr_to_rgb(const ConstTensorView& src, const TensorView& dst) {
  HDL_RETURN_IF_ERROR(check_u8("ycbcr_to_rgb", src, dst, 3, 3));
  for_each_pixel(src, dst, [](const uint8_t* s, int64_t sc, uint8_t* d, int64_t dc) {
    const float y = s[0], cb = s[sc] - 128.0f, cr = s[2 * sc] - 128.0f;
    d[0] = floor_clamp(y + 1.402f * cr);
    d[dc] = floor_clamp(y - 0.344136f * cb - 0.714136f * cr);
    d[2 * dc] = floor_clamp(y + 1.772f * cb);
  });
  return Status::ok();
}

Status adjust_brightness(const ConstTensorView& src, const TensorView& dst, double factor) {
  HDL_RETURN_IF_ERROR(check_u8("adjust_brightness", src, dst, 0, src.shape[2]));
  HDL_RETURN_IF_ERROR(check_factor("adjust_brightness", factor));
  const Blend blend(factor);
  for_each_pixel(src, dst, [&](const uint8_t* s, int64_t sc, uint8_t* d, int64_t dc) {
    for (int64_t c = 0; c < src.shape[2]; ++c) d[c * dc] = blend(s[c * sc], 0.0f);
  });
  return Status::ok();
}

Status solarize(const ConstTensorView& src, const TensorView& dst, double threshold) {
  HDL_RETURN_IF_ERROR(check_u8("solarize", src, dst, 0, src.shape[2]));
  if (std::isnan(threshold)) return Status::invalid_argument("solarize: threshold is NaN");
  uint8_t table[256];
  for (int v = 0; v < 256; ++v) table[v] = static_cast<uint8_t>(v >= threshold ? 255 - v : v);
  const int64_t C = src.shape[2];
  for_each_pixel(src, dst, [&](const uint8_t* s, int64_t sc, uint8_t* d, int64_t dc) {
    for (int64_t c = 0; c < C; ++c) d[c * dc] = table[s[c * sc]];
  });
  return Status::ok();
}

Status adjust_contrast(const ConstTensorView& src, const TensorView& dst, double factor) {
  HDL_RETURN_IF_ERROR(check_u8("adjust_contrast", src, dst, 0, src.shape[2]));
  HDL_RETURN_IF_ERROR(check_factor("adjust_contrast", factor));
  const int64_t C = src.shape[2];
  if (C != 1 && C != 3) return Status::invalid_argument("adjust_contrast: 1 or 3 channels");
  // torch.mean of the uint8 grayscale image (exact integer sum here, float32 division).
  int64_t sum = 0;
  for_each_pixel(src, [&](const uint8_t* s, int64_t sc) {
    sum += C == 3 ? static_cast<uint8_t>(gray_f(s, sc)) : s[0];
  });
  const float mean = static_cast<float>(sum) / static_cast<float>(src.shape[0] * src.shape[1]);
  const Blend blend(factor);
  for_each_pixel(src, dst, [&](const uint8_t* s, int64_t sc, uint8_t* d, int64_t dc) {
    for (int64_t c = 0; c < C; ++c) d[c * dc] = blend(s[c * sc], mean);
  });
  return Status::ok();
}

Status adjust_saturation(const ConstTensorView& src, const TensorView& dst, double factor) {
  HDL_RETURN_IF_ERROR(check_u8("adjust_saturation", src, dst, 0, src.shape[2]));
  HDL_RETURN_IF_ERROR(check_factor("adjust_saturation", factor));
  if (src.shape[2] == 1) return copy_u8(src, dst);
  if (src.shape[2] != 3) return Status::invalid_argument("adjust_saturation: 1 or 3 channels");
  const Blend blend(factor);
  for_each_pixel(src, dst, [&](const uint8_t* s, int64_t sc, uint8_t* d, int64_t dc) {
    const float gray = static_cast<float>(static_cast<uint8_t>(gray_f(s, sc)));
    const uint8_t r = s[0], g = s[sc], b = s[2 * sc];
    d[0] = blend(r, gray);
    d[dc] = blend(g, gray);
    d[2 * dc] = blend(b, gray);
  });
  return Status::ok();
}

Status adjust_hue(const ConstTensorView& src, const TensorView& dst, double hue_factor) {
  HDL_RETURN_IF_ERROR(check_u8("adjust_hue", src, dst, 0, src.shape[2]));
  if (!(hue_factor >= -0.5 && hue_factor <= 0.5)) {
    return Status::invalid_argument("adjust_hue: hue_factor must be in [-0.5, 0.5]");
  }
  if (src.shape[2] == 1) return copy_u8(src, dst);
  if (src.shape[2] != 3) return Status::invalid_argument("adjust_hue: 1 or 3 channels");
  const float shift = static_cast<float>(hue_factor);
  for_each_pixel(src, dst, [&](const uint8_t* s, int64_t sc, uint8_t* d, int64_t dc) {
    Hsv x = rgb2hsv(s[0] / 255.0f, s[sc] / 255.0f, s[2 * sc] / 255.0f);
    // torch's remainder: fmod, then moved into [0, 1).
    float h = std::fmod(x.h + shift, 1.0f);
    if (h != 0 && h < 0) h += 1.0f;
    x.h = h;
    hsv2rgb_u8(x, d, dc);
  });
  return Status::ok();
}

}  // namespace hdl::kernels
