#include "pipeline/kernels/warp.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#ifdef __x86_64__
#include <immintrin.h>
#endif

#include "pipeline/kernels/crop.h"
#include "pipeline/kernels/detail/cpu.h"

namespace hdl::kernels {
namespace {

// CPython's math.radians constant (Py_MATH_PI / 180.0).
constexpr double kDegToRad = 3.14159265358979323846 / 180.0;

// Geometry.c's coordinate rounding: COORD truncates but sends anything negative to -1; FLOOR is
// floor for negatives and truncation otherwise.
inline int coord(double v) { return v < 0.0 ? -1 : static_cast<int>(v); }
inline int floor_int(double v) { return v < 0.0 ? static_cast<int>(std::floor(v)) : static_cast<int>(v); }

// A pixel accessor on an HWC uint8 view.
struct Image {
  uint8_t* p;
  int64_t sy, sx, sc;
  int w, h, c;
  template <typename View>
  explicit Image(const View& v)
      : p(static_cast<uint8_t*>(const_cast<void*>(static_cast<const void*>(v.data)))),
        sy(v.strides[0]), sx(v.strides[1]), sc(v.strides[2]),
        w(static_cast<int>(v.shape[1])), h(static_cast<int>(v.shape[0])), c(static_cast<int>(v.shape[2])) {}
  uint8_t* at(int y, int x) const { return p + y * sy + x * sx; }
  // Geometry.c's edge rule for the filters: coordinates clamped into the image.
  int xclip(int x) const { return x < 0 ? 0 : x < w ? x : w - 1; }
  int yclip(int y) const { return y < 0 ? 0 : y < h ? y : h - 1; }
};

inline void copy_pixel(const Image& in, int iy, int ix, const Image& out, int oy, int ox) {
  const uint8_t* s = in.at(iy, ix);
  uint8_t* d = out.at(oy, ox);
  for (int c = 0; c < in.c; ++c) d[c * out.sc] = s[c * in.sc];
}

Status check(const char* what, const ConstTensorView& src, const TensorView& dst, std::span<const uint8_t> fill) {
  if (src.ndim() != 3 || dst.ndim() != 3 || src.dtype != DType::kU8 || dst.dtype != DType::kU8 ||
      src.shape != dst.shape || (src.shape[2] != 1 && src.shape[2] != 3)) {
    return Status::invalid_argument(std::string(what) + ": expected HWC uint8 views with 1 or 3 channels of one shape, got " +
                                    src.shape.to_string() + " -> " + dst.shape.to_string());
  }
  if (!fill.empty() && fill.size() != 1 && static_cast<int64_t>(fill.size()) != src.shape[2])
    return Status::invalid_argument(std::string(what) + ": fill must have 1 value or one per channel");
  return Status::ok();
}

// Image.new(mode, size, fillcolor): every pixel set to the fill colour.
void fill_image(const Image& out, std::span<const uint8_t> fill) {
  for (int y = 0; y < out.h; ++y) {
    for (int x = 0; x < out.w; ++x) {
      uint8_t* d = out.at(y, x);
      for (int c = 0; c < out.c; ++c) d[c * out.sc] = fill.empty() ? 0 : fill[fill.size() == 1 ? 0 : c];
    }
  }
}

// ImagingScaleAffine: a1 == a3 == 0, nearest, with a table of input columns.
void scale_affine(const Image& in, const Image& out, const std::array<double, 6>& a) {
  double xo = a[2] + a[0] * 0.5, yo = a[5] + a[4] * 0.5;
  std::vector<int> xintab(static_cast<size_t>(out.w), 0);
  int xmin = out.w, xmax = 0;
  for (int x = 0; x < out.w; ++x) {
    const int xin = coord(xo);
    if (xin >= 0 && xin < in.w) {
      xmax = x + 1;
      if (x < xmin) xmin = x;
      xintab[x] = xin;
    }
    xo += a[0];
  }
  for (int y = 0; y < out.h; ++y) {
    const int yi = coord(yo);
    if (yi >= 0 && yi < in.h) {
      for (int x = xmin; x < xmax; ++x) copy_pixel(in, yi, xintab[x], out, y, x);
    }
    yo += a[4];
  }
}

bool fixed_ok(const std::array<double, 6>& a, int x, int y) {
  return std::fabs(x * a[0] + y * a[1] + a[2]) < 32768.0 && std::fabs(x * a[3] + y * a[4] + a[5]) < 32768.0;
}

// affine_fixed: nearest in 16.16 fixed point, stepping along rows and columns.
void affine_fixed(const Image& in, const Image& out, const std::array<double, 6>& a) {
  auto fix = [](double v) { return static_cast<int32_t>(floor_int(v * 65536.0 + 0.5)); };
  const int32_t a0 = fix(a[0]), a1 = fix(a[1]), a3 = fix(a[3]), a4 = fix(a[4]);
  int32_t a2 = fix(a[2] + a[0] * 0.5 + a[1] * 0.5), a5 = fix(a[5] + a[3] * 0.5 + a[4] * 0.5);
  for (int y = 0; y < out.h; ++y) {
    int32_t xx = a2, yy = a5;
    for (int x = 0; x < out.w; ++x) {
      const int xin = xx >> 16;  // arithmetic shift: floor
      if (xin >= 0 && xin < in.w) {
        const int yin = yy >> 16;
        if (yin >= 0 && yin < in.h) copy_pixel(in, yin, xin, out, y, x);
      }
      xx += a0;
      yy += a3;
    }
    a2 += a1;
    a5 += a4;
  }
}

// ImagingTransformAffine's double-precision nearest loop (coordinates beyond fixed point).
void affine_double(const Image& in, const Image& out, const std::array<double, 6>& a) {
  double xo = a[2] + a[1] * 0.5 + a[0] * 0.5, yo = a[5] + a[4] * 0.5 + a[3] * 0.5;
  for (int y = 0; y < out.h; ++y) {
    double xx = xo, yy = yo;
    for (int x = 0; x < out.w; ++x) {
      const int xin = coord(xx);
      if (xin >= 0 && xin < in.w) {
        const int yin = coord(yy);
        if (yin >= 0 && yin < in.h) copy_pixel(in, yin, xin, out, y, x);
      }
      xx += a[0];
      yy += a[3];
    }
    xo += a[1];
    yo += a[4];
  }
}

// ImagingGenericTransform's source point of output pixel (ox, oy) under affine `a`, minus half a
// pixel (the filters' pixel centres); false when it lies outside the input, where the output
// pixel keeps the fill colour.
inline bool source_point(const Image& in, const std::array<double, 6>& a, int ox, int oy, double& xx, double& yy) {
  const double xin = ox + 0.5, yin = oy + 0.5;
  xx = a[0] * xin + a[1] * yin + a[2];
  yy = a[3] * xin + a[4] * yin + a[5];
  if (xx < 0.0 || xx >= in.w || yy < 0.0 || yy >= in.h) return false;
  xx -= 0.5;
  yy -= 0.5;
  return true;
}

// ImagingGenericTransform with affine_transform and the bilinear filter.
void affine_bilinear(const Image& in, const Image& out, const std::array<double, 6>& a) {
  for (int oy = 0; oy < out.h; ++oy) {
    for (int ox = 0; ox < out.w; ++ox) {
      double xx, yy;
      if (!source_point(in, a, ox, oy, xx, yy)) continue;  // keeps the fill colour
      const int x = floor_int(xx), y = floor_int(yy);
      const double dx = xx - x, dy = yy - y;
      const int x0 = in.xclip(x), x1 = in.xclip(x + 1);
      const bool below = y + 1 >= 0 && y + 1 < in.h;
      uint8_t* d = out.at(oy, ox);
      for (int c = 0; c < in.c; ++c) {
        const uint8_t* r = in.at(in.yclip(y), 0) + c * in.sc;
        const int p0 = r[x0 * in.sx], p1 = r[x1 * in.sx];
        double v1 = p0 + (p1 - p0) * dx, v2 = v1;
        if (below) {
          const uint8_t* r2 = in.at(y + 1, 0) + c * in.sc;
          const int q0 = r2[x0 * in.sx], q1 = r2[x1 * in.sx];
          v2 = q0 + (q1 - q0) * dx;
        }
        v1 = v1 + (v2 - v1) * dy;
        d[c * out.sc] = static_cast<uint8_t>(v1);
      }
    }
  }
}

// ImagingGenericTransform with affine_transform and the bicubic filter (Pillow's cubic with
// a = -1 in Horner form, in double; rows past the bottom repeat the previous row's value).
void affine_bicubic(const Image& in, const Image& out, const std::array<double, 6>& a) {
  auto cubic = [](double v1, double v2, double v3, double v4, double d) {
    const double p1 = v2, p2 = -v1 + v3, p3 = 2 * (v1 - v2) + v3 - v4, p4 = -v1 + v2 - v3 + v4;
    return p1 + d * (p2 + d * (p3 + d * p4));
  };
  for (int oy = 0; oy < out.h; ++oy) {
    for (int ox = 0; ox < out.w; ++ox) {
      double xx, yy;
      if (!source_point(in, a, ox, oy, xx, yy)) continue;  // keeps the fill colour
      const int x = floor_int(xx) - 1, y = floor_int(yy) - 1;
      const double dx = xx - floor_int(xx), dy = yy - floor_int(yy);
      const int xs[4] = {in.xclip(x) * static_cast<int>(in.sx), in.xclip(x + 1) * static_cast<int>(in.sx),
                         in.xclip(x + 2) * static_cast<int>(in.sx), in.xclip(x + 3) * static_cast<int>(in.sx)};
      uint8_t* d = out.at(oy, ox);
      for (int c = 0; c < in.c; ++c) {
        auto row = [&](int yr) {
          const uint8_t* r = in.at(yr, 0) + c * in.sc;
          // Integer terms as in Pillow's macro (its arguments are UINT8 there).
          const int v1 = r[xs[0]], v2 = r[xs[1]], v3 = r[xs[2]], v4 = r[xs[3]];
          const int p2 = -v1 + v3, p3 = 2 * (v1 - v2) + v3 - v4, p4 = -v1 + v2 - v3 + v4;
          return v2 + dx * (p2 + dx * (p3 + dx * p4));
        };
        double v[4];
        v[0] = row(in.yclip(y));
        for (int k = 1; k < 4; ++k) v[k] = y + k >= 0 && y + k < in.h ? row(y + k) : v[k - 1];
        const double r = cubic(v[0], v[1], v[2], v[3], dy);
        d[c * out.sc] = r <= 0.0 ? 0 : r >= 255.0 ? 255 : static_cast<uint8_t>(r);
      }
    }
  }
}

// ---- AVX2 twins of affine_bilinear / affine_bicubic for RGB images with dense pixels: a pixel's
// three channels in three of four double lanes, each lane doing the scalar loop's arithmetic in
// its order (the integer terms of Pillow's macros are exact in double), so the bytes are the
// scalar loops'. The coordinates, the clipping and the rows taken are the scalar code's, per
// pixel.
#ifdef HDL_KERNELS_AVX2
__attribute__((target("avx2"))) inline __m256d load_rgb(const uint8_t* p) {
  uint16_t lo;  // three bytes as a 16- and an 8-bit load (a 3-byte memcpy goes through the stack)
  std::memcpy(&lo, p, 2);
  const uint32_t w = lo | static_cast<uint32_t>(p[2]) << 16;
  return _mm256_cvtepi32_pd(_mm_cvtepu8_epi32(_mm_cvtsi32_si128(static_cast<int>(w))));
}

// The first three lanes of `v` (already within [0, 255]) truncated to bytes.
__attribute__((target("avx2"))) inline void store_rgb(__m256d v, uint8_t* d) {
  const __m128i i = _mm256_cvttpd_epi32(v);
  const uint32_t b = static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_packus_epi16(_mm_packs_epi32(i, i), i)));
  const uint16_t lo = static_cast<uint16_t>(b);
  std::memcpy(d, &lo, 2);
  d[2] = static_cast<uint8_t>(b >> 16);
}

__attribute__((target("avx2"))) void affine_bilinear_rgb_avx2(const Image& in, const Image& out,
                                                              const std::array<double, 6>& a) {
  for (int oy = 0; oy < out.h; ++oy) {
    for (int ox = 0; ox < out.w; ++ox) {
      double xx, yy;
      if (!source_point(in, a, ox, oy, xx, yy)) continue;  // keeps the fill colour
      const int x = floor_int(xx), y = floor_int(yy);
      const __m256d dx = _mm256_set1_pd(xx - x), dy = _mm256_set1_pd(yy - y);
      const int64_t x0 = in.xclip(x) * in.sx, x1 = in.xclip(x + 1) * in.sx;
      const uint8_t* r = in.at(in.yclip(y), 0);
      const __m256d p0 = load_rgb(r + x0), p1 = load_rgb(r + x1);
      __m256d v1 = _mm256_add_pd(p0, _mm256_mul_pd(_mm256_sub_pd(p1, p0), dx)), v2 = v1;
      if (y + 1 >= 0 && y + 1 < in.h) {
        const uint8_t* r2 = in.at(y + 1, 0);
        const __m256d q0 = load_rgb(r2 + x0), q1 = load_rgb(r2 + x1);
        v2 = _mm256_add_pd(q0, _mm256_mul_pd(_mm256_sub_pd(q1, q0), dx));
      }
      store_rgb(_mm256_add_pd(v1, _mm256_mul_pd(_mm256_sub_pd(v2, v1), dy)), out.at(oy, ox));
    }
  }
}

// p1 + d * (p2 + d * (p3 + d * p4)) with the p's of Pillow's cubic (a = -1) from v1..v4, in the
// scalar code's order of operations.
__attribute__((target("avx2"))) inline __m256d cubic_avx2(__m256d v1, __m256d v2, __m256d v3, __m256d v4, __m256d d) {
  const __m256d zero = _mm256_setzero_pd(), two = _mm256_set1_pd(2.0);
  const __m256d p2 = _mm256_add_pd(_mm256_sub_pd(zero, v1), v3);
  const __m256d p3 = _mm256_sub_pd(_mm256_add_pd(_mm256_mul_pd(two, _mm256_sub_pd(v1, v2)), v3), v4);
  const __m256d p4 = _mm256_add_pd(_mm256_sub_pd(_mm256_add_pd(_mm256_sub_pd(zero, v1), v2), v3), v4);
  return _mm256_add_pd(v2, _mm256_mul_pd(d, _mm256_add_pd(p2, _mm256_mul_pd(d, _mm256_add_pd(p3, _mm256_mul_pd(d, p4))))));
}

// Bytes k * 3 .. k * 3 + 2 of `v` as doubles in three lanes.
template <int K>
__attribute__((target("avx2"))) inline __m256d rgb_at(__m128i v) {
  return _mm256_cvtepi32_pd(_mm_cvtepu8_epi32(_mm_srli_si128(v, 3 * K)));
}

// One row's cubic along x: the four pixels at r + xs[0..3]; `run`: they are four consecutive
// pixels with at least 16 bytes readable from the first, taken with one load.
__attribute__((target("avx2"))) inline __m256d cubic_row_avx2(const uint8_t* r, const int64_t* xs, bool run,
                                                             __m256d dx) {
  if (run) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + xs[0]));
    return cubic_avx2(rgb_at<0>(v), rgb_at<1>(v), rgb_at<2>(v), rgb_at<3>(v), dx);
  }
  return cubic_avx2(load_rgb(r + xs[0]), load_rgb(r + xs[1]), load_rgb(r + xs[2]), load_rgb(r + xs[3]), dx);
}

__attribute__((target("avx2"))) void affine_bicubic_rgb_avx2(const Image& in, const Image& out,
                                                             const std::array<double, 6>& a) {
  const __m256d zero = _mm256_setzero_pd(), top = _mm256_set1_pd(255.0);
  for (int oy = 0; oy < out.h; ++oy) {
    for (int ox = 0; ox < out.w; ++ox) {
      double xx, yy;
      if (!source_point(in, a, ox, oy, xx, yy)) continue;  // keeps the fill colour
      const int x = floor_int(xx) - 1, y = floor_int(yy) - 1;
      const __m256d dx = _mm256_set1_pd(xx - floor_int(xx)), dy = _mm256_set1_pd(yy - floor_int(yy));
      const int64_t xs[4] = {in.xclip(x) * in.sx, in.xclip(x + 1) * in.sx, in.xclip(x + 2) * in.sx, in.xclip(x + 3) * in.sx};
      // Pixels x .. x + 5 inside the row: x .. x + 3 are the taps, and the 16-byte load ends
      // within pixel x + 5.
      const bool run = x >= 0 && x + 5 < in.w && in.sx == 3;
      __m256d v[4];
      v[0] = cubic_row_avx2(in.at(in.yclip(y), 0), xs, run, dx);
      for (int k = 1; k < 4; ++k)
        v[k] = y + k >= 0 && y + k < in.h ? cubic_row_avx2(in.at(y + k, 0), xs, run, dx) : v[k - 1];
      const __m256d r = cubic_avx2(v[0], v[1], v[2], v[3], dy);
      store_rgb(_mm256_min_pd(_mm256_max_pd(r, zero), top), out.at(oy, ox));
    }
  }
}
#endif

// Python's round(x, 15): correctly rounded to 15 decimals (glibc's printf rounds exactly).
double round15(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15f", x);
  return std::strtod(buf, nullptr);
}

// Image.transpose(ROTATE_90 / ROTATE_270) of a square image: counter-clockwise / clockwise.
void transpose_square(const Image& in, const Image& out, bool ccw) {
  for (int y = 0; y < out.h; ++y) {
    for (int x = 0; x < out.w; ++x) {
      if (ccw) copy_pixel(in, x, in.w - 1 - y, out, y, x);
      else copy_pixel(in, in.h - 1 - x, y, out, y, x);
    }
  }
}

}  // namespace

Status affine_transform(const ConstTensorView& src, const TensorView& dst, const std::array<double, 6>& a,
                        WarpFilter filter, std::span<const uint8_t> fill) {
  HDL_RETURN_IF_ERROR(check("affine_transform", src, dst, fill));
  const Image in(src), out(dst);
  fill_image(out, fill);
#ifdef HDL_KERNELS_AVX2
  const bool rgb_avx2 = in.c == 3 && in.sc == 1 && out.sc == 1 && detail::cpu_has_avx2();
#else
  const bool rgb_avx2 = false;
#endif
  if (filter == WarpFilter::kBilinear) {
#ifdef HDL_KERNELS_AVX2
    if (rgb_avx2) return affine_bilinear_rgb_avx2(in, out, a), Status::ok();
#endif
    affine_bilinear(in, out, a);
  } else if (filter == WarpFilter::kBicubic) {
#ifdef HDL_KERNELS_AVX2
    if (rgb_avx2) return affine_bicubic_rgb_avx2(in, out, a), Status::ok();
#endif
    affine_bicubic(in, out, a);
  } else if (a[1] == 0 && a[3] == 0) {
    scale_affine(in, out, a);
  } else if (fixed_ok(a, 0, 0) && fixed_ok(a, out.w, out.h) && fixed_ok(a, 0, out.h) && fixed_ok(a, out.w, 0)) {
    affine_fixed(in, out, a);
  } else {
    affine_double(in, out, a);
  }
  return Status::ok();
}

Status rotate(const ConstTensorView& src, const TensorView& dst, double degrees, WarpFilter filter,
              std::span<const uint8_t> fill) {
  HDL_RETURN_IF_ERROR(check("rotate", src, dst, fill));
  // Python's angle % 360.0: the result takes the sign of 360.
  double angle = std::fmod(degrees, 360.0);
  if (angle != 0 && angle < 0) angle += 360.0;
  const Image in(src), out(dst);
  if (angle == 0) {
    copy(src, dst);
    return Status::ok();
  }
  if (angle == 180) return flip(src, dst, true, true);
  if ((angle == 90 || angle == 270) && in.w == in.h) {
    transpose_square(in, out, angle == 90);
    return Status::ok();
  }
  const double t = -(angle * kDegToRad);
  std::array<double, 6> m = {round15(std::cos(t)), round15(std::sin(t)), 0.0, round15(-std::sin(t)), round15(std::cos(t)), 0.0};
  const double cx = in.w / 2.0, cy = in.h / 2.0;
  m[2] = m[0] * -cx + m[1] * -cy + 0.0;
  m[5] = m[3] * -cx + m[4] * -cy + 0.0;
  m[2] += cx;
  m[5] += cy;
  return affine_transform(src, dst, m, filter, fill);
}

std::array<double, 6> inverse_affine_matrix(std::array<double, 2> center, double angle,
                                            std::array<double, 2> translate, double scale,
                                            std::array<double, 2> shear) {
  const double rot = angle * kDegToRad, sx = shear[0] * kDegToRad, sy = shear[1] * kDegToRad;
  const double cx = center[0], cy = center[1], tx = translate[0], ty = translate[1];
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  std::array<double, 6> m = {d / scale, -b / scale, 0.0 / scale, -c / scale, a / scale, 0.0 / scale};
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  return m;
}

}  // namespace hdl::kernels
