#include "pipeline/kernels/augment.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>

#include "pipeline/kernels/detail/pixels.h"

namespace hdl::kernels {
namespace {

using detail::for_each_pixel;

using Hist = std::array<int64_t, 256>;
using Lut = std::array<uint8_t, 256>;

Status check(const char* what, const ConstTensorView& src, const TensorView& dst) {
  if (src.ndim() != 3 || dst.ndim() != 3 || src.dtype != DType::kU8 || dst.dtype != DType::kU8 ||
      src.shape != dst.shape || (src.shape[2] != 1 && src.shape[2] != 3)) {
    return Status::invalid_argument(std::string(what) + ": expected HWC uint8 views with 1 or 3 channels of one shape, got " +
                                    src.shape.to_string() + " " + dtype_name(src.dtype) + " -> " +
                                    dst.shape.to_string() + " " + dtype_name(dst.dtype));
  }
  return Status::ok();
}

// Image.point(lut) with one table per channel.
void apply_luts(const ConstTensorView& src, const TensorView& dst, const std::array<Lut, 3>& luts) {
  const int64_t C = src.shape[2];
  for_each_pixel(src, dst, [&](const uint8_t* s, int64_t sc, uint8_t* d, int64_t dc) {
    for (int64_t c = 0; c < C; ++c) d[c * dc] = luts[c][s[c * sc]];
  });
}

Status apply_lut(const char* what, const ConstTensorView& src, const TensorView& dst, const Lut& lut) {
  HDL_RETURN_IF_ERROR(check(what, src, dst));
  apply_luts(src, dst, {lut, lut, lut});
  return Status::ok();
}

std::array<Hist, 3> histograms(const ConstTensorView& src) {
  std::array<Hist, 3> h{};
  const int64_t C = src.shape[2];
  for_each_pixel(src, [&](const uint8_t* s, int64_t sc) {
    for (int64_t c = 0; c < C; ++c) ++h[c][s[c * sc]];
  });
  return h;
}

// Pillow's RGB -> L: L24 = 19595 R + 38470 G + 7471 B + 0x8000, >> 16.
inline uint8_t luma(const uint8_t* p, int64_t sc) {
  return static_cast<uint8_t>((p[0] * 19595 + p[sc] * 38470 + p[2 * sc] * 7471 + 0x8000) >> 16);
}

// Image.blend(degenerate, image, alpha) for one value: Blend.c computes in float32 with a float32
// alpha, truncates, and clips when alpha is outside [0, 1] (inside, the value cannot leave
// [0, 255]).
inline uint8_t blend(float alpha, int degenerate, int image) {
  const float t = static_cast<float>(degenerate) + alpha * static_cast<float>(image - degenerate);
  if (t <= 0.0f) return 0;
  if (t >= 255.0f) return 255;
  return static_cast<uint8_t>(t);
}

// Blends with a degenerate value computed per pixel by degen(src pixel, channel).
template <typename Degenerate>
void blend_with(const ConstTensorView& src, const TensorView& dst, double factor, Degenerate&& degen) {
  const float alpha = static_cast<float>(factor);
  const int64_t C = src.shape[2];
  for_each_pixel(src, dst, [&](const uint8_t* s, int64_t sc, uint8_t* d, int64_t dc) {
    int deg[3];
    for (int64_t c = 0; c < C; ++c) deg[c] = degen(s, c);  // read every channel before writing (in place)
    for (int64_t c = 0; c < C; ++c) d[c * dc] = blend(alpha, deg[c], s[c * sc]);
  });
}

}  // namespace

Status blend_images(const ConstTensorView& a, const ConstTensorView& b, const TensorView& dst, double alpha) {
  HDL_RETURN_IF_ERROR(check("blend_images", a, dst));
  if (b.shape != a.shape || b.dtype != DType::kU8)
    return Status::invalid_argument("blend_images: the images differ in shape: " + a.shape.to_string() + " and " +
                                    b.shape.to_string());
  const float f = static_cast<float>(alpha);
  const int64_t C = a.shape[2];
  for (int64_t y = 0; y < a.shape[0]; ++y) {
    const uint8_t* pa = a.typed<uint8_t>() + y * a.strides[0];
    const uint8_t* pb = b.typed<uint8_t>() + y * b.strides[0];
    uint8_t* pd = dst.typed<uint8_t>() + y * dst.strides[0];
    for (int64_t x = 0; x < a.shape[1]; ++x)
      for (int64_t c = 0; c < C; ++c)
        pd[x * dst.strides[1] + c * dst.strides[2]] =
            blend(f, pa[x * a.strides[1] + c * a.strides[2]], pb[x * b.strides[1] + c * b.strides[2]]);
  }
  return Status::ok();
}

Status posterize(const ConstTensorView& src, const TensorView& dst, int bits) {
  if (bits < 0 || bits > 8) return Status::invalid_argument("posterize: bits must be in [0, 8], got " + std::to_string(bits));
  const int mask = ~((1 << (8 - bits)) - 1);
  Lut lut;
  for (int i = 0; i < 256; ++i) lut[i] = static_cast<uint8_t>(i & mask);
  return apply_lut("posterize", src, dst, lut);
}

Status solarize_add(const ConstTensorView& src, const TensorView& dst, int add, int threshold) {
  if (add < 0 || add > 255) return Status::invalid_argument("solarize_add: add must be in [0, 255], got " + std::to_string(add));
  Lut lut;
  for (int i = 0; i < 256; ++i) lut[i] = static_cast<uint8_t>(i < threshold ? std::min(255, i + add) : i);
  return apply_lut("solarize_add", src, dst, lut);
}

Status invert(const ConstTensorView& src, const TensorView& dst) {
  Lut lut;
  for (int i = 0; i < 256; ++i) lut[i] = static_cast<uint8_t>(255 - i);
  return apply_lut("invert", src, dst, lut);
}

Status autocontrast(const ConstTensorView& src, const TensorView& dst) {
  HDL_RETURN_IF_ERROR(check("autocontrast", src, dst));
  const auto hist = histograms(src);
  std::array<Lut, 3> luts;
  for (int64_t c = 0; c < src.shape[2]; ++c) {
    const Hist& h = hist[c];
    int lo = 0, hi = 255;
    while (lo < 255 && h[lo] == 0) ++lo;
    while (hi > 0 && h[hi] == 0) --hi;
    for (int i = 0; i < 256; ++i) {
      if (hi <= lo) {
        luts[c][i] = static_cast<uint8_t>(i);
        continue;
      }
      // Python: scale = 255.0 / (hi - lo); offset = -lo * scale; int(ix * scale + offset).
      const double scale = 255.0 / (hi - lo), offset = -lo * scale;
      const double v = i * scale + offset;
      const int64_t t = static_cast<int64_t>(v);  // int() truncates toward zero
      luts[c][i] = static_cast<uint8_t>(t < 0 ? 0 : t > 255 ? 255 : t);
    }
  }
  apply_luts(src, dst, luts);
  return Status::ok();
}

Status equalize(const ConstTensorView& src, const TensorView& dst) {
  HDL_RETURN_IF_ERROR(check("equalize", src, dst));
  const auto hist = histograms(src);
  std::array<Lut, 3> luts;
  for (int64_t c = 0; c < src.shape[2]; ++c) {
    const Hist& h = hist[c];
    int64_t total = 0, last = 0, present = 0;
    for (int i = 0; i < 256; ++i) {
      if (h[i]) total += h[i], last = h[i], ++present;
    }
    const int64_t step = present <= 1 ? 0 : (total - last) / 255;
    int64_t n = step / 2;
    for (int i = 0; i < 256; ++i) {
      if (step == 0) {
        luts[c][i] = static_cast<uint8_t>(i);
        continue;
      }
      // Entries past the highest value present can exceed 255; no pixel reads them, and
      // Image.point would clip them.
      const int64_t v = n / step;
      luts[c][i] = static_cast<uint8_t>(v > 255 ? 255 : v);
      n += h[i];
    }
  }
  apply_luts(src, dst, luts);
  return Status::ok();
}

Status enhance_brightness(const ConstTensorView& src, const TensorView& dst, double factor) {
  HDL_RETURN_IF_ERROR(check("enhance_brightness", src, dst));
  blend_with(src, dst, factor, [](const uint8_t*, int64_t) { return 0; });
  return Status::ok();
}

Status enhance_color(const ConstTensorView& src, const TensorView& dst, double factor) {
  HDL_RETURN_IF_ERROR(check("enhance_color", src, dst));
  const int64_t sc = src.strides[2];
  if (src.shape[2] == 1) {
    blend_with(src, dst, factor, [](const uint8_t* s, int64_t) { return static_cast<int>(s[0]); });
  } else {
    blend_with(src, dst, factor, [sc](const uint8_t* s, int64_t) { return static_cast<int>(luma(s, sc)); });
  }
  return Status::ok();
}

Status enhance_contrast(const ConstTensorView& src, const TensorView& dst, double factor) {
  HDL_RETURN_IF_ERROR(check("enhance_contrast", src, dst));
  // ImageStat.Stat(img.convert("L")).mean: sum(i * h[i]) / n in Python (exact integers, one
  // double division); then int(mean + 0.5).
  const bool rgb = src.shape[2] == 3;
  int64_t sum = 0;
  for_each_pixel(src, [&](const uint8_t* s, int64_t sc) { sum += rgb ? luma(s, sc) : s[0]; });
  const int64_t n = src.shape[0] * src.shape[1];
  const int mean = n ? static_cast<int>(static_cast<double>(sum) / static_cast<double>(n) + 0.5) : 0;
  blend_with(src, dst, factor, [mean](const uint8_t*, int64_t) { return mean; });
  return Status::ok();
}

Status enhance_sharpness(const ConstTensorView& src, const TensorView& dst, double factor) {
  HDL_RETURN_IF_ERROR(check("enhance_sharpness", src, dst));
  const int64_t H = src.shape[0], W = src.shape[1], C = src.shape[2];
  const auto* sp = static_cast<const uint8_t*>(src.data);
  const int64_t sy = src.strides[0], sx = src.strides[1], sc = src.strides[2];
  // ImageFilter.SMOOTH: (3, 3), scale 13, weights 1 1 1 / 1 5 1 / 1 1 1, each divided by the
  // scale in double and stored as float32 (_imaging.c), summed row by row in float32 from a
  // 0.5 offset (Filter.c rounds by adding 0.5, then truncates).
  const float k1 = static_cast<float>(1.0 / 13.0), k5 = static_cast<float>(5.0 / 13.0);
  const bool filtered = H >= 3 && W >= 3;
  auto smooth = [&](int64_t y, int64_t x, int64_t c) -> int {
    const uint8_t* p = sp + y * sy + x * sx + c * sc;
    if (!filtered || y == 0 || x == 0 || y == H - 1 || x == W - 1) return p[0];
    auto row = [&](const uint8_t* r, float km) {
      return static_cast<float>(r[-sx]) * k1 + static_cast<float>(r[0]) * km + static_cast<float>(r[sx]) * k1;
    };
    float ss = 0.5f;
    ss += row(p + sy, k1);
    ss += row(p, k5);
    ss += row(p - sy, k1);
    if (ss <= 0.0f) return 0;
    if (ss >= 255.0f) return 255;
    return static_cast<int>(static_cast<uint8_t>(ss));
  };
  const float alpha = static_cast<float>(factor);
  auto* dp = static_cast<uint8_t*>(dst.data);
  for (int64_t y = 0; y < H; ++y) {
    for (int64_t x = 0; x < W; ++x) {
      for (int64_t c = 0; c < C; ++c) {
        const uint8_t v = sp[y * sy + x * sx + c * sc];
        dp[y * dst.strides[0] + x * dst.strides[1] + c * dst.strides[2]] = blend(alpha, smooth(y, x, c), v);
      }
    }
  }
  return Status::ok();
}

}  // namespace hdl::kernels
