#include "pipeline/kernels/pil_blur.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace hdl::kernels {
namespace {

constexpr int kPasses = 3;  // Pillow's gaussian_blur default

// One extended box blur of a line of n pixels of c channels (interleaved), Pillow's
// ImagingLineBoxBlur: a running sum over [x - r, x + r] with the edge pixels repeated, plus
// the two pixels just outside it weighted fw; 8.24 fixed point, rounded half up.
void box_blur_line(const uint8_t* in, uint8_t* out, int n, int c, int r, uint32_t ww, uint32_t fw) {
  const int last = n - 1;
  const int edge_a = std::min(r + 1, n);
  const int edge_b = std::max(n - r - 1, 0);
  for (int ch = 0; ch < c; ++ch) {
    const auto px = [&](int x) -> uint32_t { return in[x * c + ch]; };
    // The sum for pixel -1: [-r-1, -1] is the first pixel repeated, then [0, r - 1], where
    // pixels past the end are the last one repeated.
    uint32_t acc = px(0) * uint32_t(r + 1);
    for (int x = 0; x < edge_a - 1; ++x) acc += px(x);
    acc += px(last) * uint32_t(r - edge_a + 1);
    const auto emit = [&](int x, int sub, int add, int left, int right) {
      acc += px(add) - px(sub);  // modulo 2^32, as Pillow's UINT32: the sum never goes negative
      const uint32_t bulk = acc * ww + (px(left) + px(right)) * fw;
      out[x * c + ch] = static_cast<uint8_t>((bulk + (1u << 23)) >> 24);
    };
    if (edge_a <= edge_b) {
      for (int x = 0; x < edge_a; ++x) emit(x, 0, x + r, 0, x + r + 1);
      for (int x = edge_a; x < edge_b; ++x) emit(x, x - r - 1, x + r, x - r - 1, x + r + 1);
      for (int x = edge_b; x <= last; ++x) emit(x, x - r - 1, last, x - r - 1, last);
    } else {
      for (int x = 0; x < edge_b; ++x) emit(x, 0, x + r, 0, x + r + 1);
      for (int x = edge_b; x < edge_a; ++x) emit(x, 0, last, 0, last);
      for (int x = edge_a; x <= last; ++x) emit(x, x - r - 1, last, x - r - 1, last);
    }
  }
}

}  // namespace

float pil_box_radius(float radius, int passes) {
  // float32 throughout, as Pillow's C (sqrt and floor in double, stored to float).
  const float sigma2 = radius * radius / static_cast<float>(passes);
  const float big_l = static_cast<float>(std::sqrt(12.0 * static_cast<double>(sigma2) + 1.0));
  const float l = static_cast<float>(std::floor((static_cast<double>(big_l) - 1.0) / 2.0));
  float a = (2.0f * l + 1.0f) * (l * (l + 1.0f) - 3.0f * sigma2);
  a /= 6.0f * (sigma2 - (l + 1.0f) * (l + 1.0f));
  return l + a;
}

Status pil_gaussian_blur(const ConstTensorView& src, const TensorView& dst, float radius, PilBlurWorkspace& ws) {
  if (src.dtype != DType::kU8 || dst.dtype != DType::kU8 || src.shape.ndim() != 3 || !(src.shape == dst.shape))
    return Status::invalid_argument("pil_gaussian_blur: HWC uint8 input and output of one shape expected, got " +
                                    src.shape.to_string() + " and " + dst.shape.to_string());
  const int h = static_cast<int>(src.shape[0]), w = static_cast<int>(src.shape[1]), c = static_cast<int>(src.shape[2]);
  if (c < 1 || c > 4) return Status::invalid_argument("pil_gaussian_blur: 1 to 4 channels, got " + std::to_string(c));
  if (!(radius >= 0)) return Status::invalid_argument("pil_gaussian_blur: radius must be >= 0");
  const float box = pil_box_radius(radius, kPasses);
  const int r = static_cast<int>(box);
  // Pillow: (UINT32)(1 << 24) / (floatRadius * 2 + 1), a float32 division, truncated.
  const auto ww = static_cast<uint32_t>(16777216.0f / (box * 2.0f + 1.0f));
  const uint32_t fw = ((1u << 24) - uint32_t(r * 2 + 1) * ww) / 2;
  const auto at = [](const auto& v, int y, int x) {
    return static_cast<uint8_t*>(const_cast<void*>(static_cast<const void*>(v.data))) + y * v.strides[0] +
           x * v.strides[1];
  };
  const int64_t cs_in = src.strides[2], cs_out = dst.strides[2];
  const int longest = std::max(w, h);
  ws.line_in.resize(size_t(longest) * c);
  ws.line_out.resize(size_t(longest) * c);
  uint8_t* a = ws.line_in.data();
  uint8_t* b = ws.line_out.data();
  // Horizontal passes, a row at a time: src row in, dst row out.
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x)
      for (int ch = 0; ch < c; ++ch) a[x * c + ch] = at(src, y, x)[ch * cs_in];
    if (radius != 0) {
      for (int pass = 0; pass < kPasses; ++pass) {
        box_blur_line(a, b, w, c, r, ww, fw);
        std::swap(a, b);
      }
    }
    for (int x = 0; x < w; ++x)
      for (int ch = 0; ch < c; ++ch) at(dst, y, x)[ch * cs_out] = a[x * c + ch];
  }
  if (radius == 0) return Status::ok();
  // Vertical passes, a column at a time (Pillow transposes, blurs rows, transposes back).
  for (int x = 0; x < w; ++x) {
    for (int y = 0; y < h; ++y)
      for (int ch = 0; ch < c; ++ch) a[y * c + ch] = at(dst, y, x)[ch * cs_out];
    for (int pass = 0; pass < kPasses; ++pass) {
      box_blur_line(a, b, h, c, r, ww, fw);
      std::swap(a, b);
    }
    for (int y = 0; y < h; ++y)
      for (int ch = 0; ch < c; ++ch) at(dst, y, x)[ch * cs_out] = a[y * c + ch];
  }
  return Status::ok();
}

}  // namespace hdl::kernels
