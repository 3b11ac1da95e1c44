// The two separable passes of the resize kernels (internal to pipeline/kernels; included by
// resize.cc only). Moved out of resize.cc so that resize() and resize_window() share them.
//
// A pixel's value is a function of its weight-table row and its source pixels only (not of the
// source row's width or of where the row sits): that is what makes resize_window() bit-exact
// with resize(). Views whose rows are not dense pixels take the strided paths, which sum the
// 3-channel taps in one chain instead of two (within 1 grey level of the dense paths).
//
// Thread safety: pure functions; the workspace is per thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <type_traits>
#include <vector>

#include "media/api.h"
#include "pipeline/kernels/detail/cpu.h"
#include "pipeline/kernels/detail/resize_weights.h"
#include "pipeline/kernels/resize.h"

HDL_API_BEGIN
namespace hdl::kernels::detail {

struct AxisTable {
  const float* w = nullptr;
  const int32_t* start = nullptr;
  int taps = 0;
  int64_t out = 0;
};

// Element (y, x, c) of an HWC view sits at data[y * sy + x * sx + c * sc].
template <typename T>
struct Plane {
  const T* data;
  int64_t sy, sx, sc, w, c;
  bool dense() const { return sx == c && sc == 1; }
  const T* row(int64_t y) const { return data + y * sy; }
};

template <typename T>
Plane<T> plane_of(const ConstTensorView& v) {
  return {v.typed<T>(), v.strides[0], v.strides[1], v.strides[2], v.shape[1], v.shape[2]};
}

// Horizontal pass over one row with a compile-time channel count, so that the channel loop is
// unrolled and the accumulators stay in registers.
template <typename T, int C>
void h_row_dense(const T* __restrict__ src, const AxisTable& ax, float* __restrict__ dst) {
  for (int64_t x = 0; x < ax.out; ++x) {
    const float* w = ax.w + x * ax.taps;
    const T* s = src + static_cast<int64_t>(ax.start[x]) * C;
    float acc[C] = {};
    for (int k = 0; k < ax.taps; ++k) {
      for (int c = 0; c < C; ++c) acc[c] += w[k] * static_cast<float>(s[k * C + c]);
    }
    for (int c = 0; c < C; ++c) dst[x * C + c] = acc[c];
  }
}

// GCC/Clang vector extensions: portable 4-lane SIMD without intrinsics headers.
typedef float V4f __attribute__((vector_size(16)));
typedef uint8_t V4u8 __attribute__((vector_size(4)));

inline V4f load4(const float* p) {
  V4f v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
inline V4f load4(const uint8_t* p) {
  V4u8 b;
  std::memcpy(&b, p, sizeof(b));
  return __builtin_convertvector(b, V4f);
}

// The scalar twin of h_row_rgb's vector loop: the same two accumulator chains (even / odd taps)
// summed in the same order, so a pixel's value does not depend on which path computed it, and
// hence not on how wide the source row is (resize_window relies on this for bit-exactness).
template <typename T>
void h_pixel_rgb_scalar(const T* s, const float* w, int taps, float* out) {
  float even[3] = {}, odd[3] = {};
  int k = 0;
  for (; k + 1 < taps; k += 2) {
    for (int c = 0; c < 3; ++c) {
      even[c] += w[k] * static_cast<float>(s[k * 3 + c]);
      odd[c] += w[k + 1] * static_cast<float>(s[k * 3 + 3 + c]);
    }
  }
  if (k < taps) {
    for (int c = 0; c < 3; ++c) even[c] += w[k] * static_cast<float>(s[k * 3 + c]);
  }
  for (int c = 0; c < 3; ++c) out[c] = even[c] + odd[c];
}

// Three interleaved channels processed as four lanes (the fourth reads the next pixel's first
// channel and is discarded), so that each tap is one 4-wide multiply-add; two accumulators
// (even / odd taps) halve the dependency chain. Pixels whose taps end at the last input pixel,
// where the fourth lane would read past the row, take the scalar twin.
template <typename T>
void h_row_rgb(const T* __restrict__ src, int64_t in_w, const AxisTable& ax, float* __restrict__ dst) {
  for (int64_t x = 0; x < ax.out; ++x) {
    const float* w = ax.w + x * ax.taps;
    const T* s = src + static_cast<int64_t>(ax.start[x]) * 3;
    if (ax.start[x] + ax.taps >= in_w) {
      h_pixel_rgb_scalar(s, w, ax.taps, dst + x * 3);
      continue;
    }
    V4f even = {0, 0, 0, 0}, odd = {0, 0, 0, 0};
    int k = 0;
    for (; k + 1 < ax.taps; k += 2) {
      even += w[k] * load4(s + k * 3);
      odd += w[k + 1] * load4(s + k * 3 + 3);
    }
    if (k < ax.taps) even += w[k] * load4(s + k * 3);
    const V4f sum = even + odd;
    for (int c = 0; c < 3; ++c) dst[x * 3 + c] = sum[c];
  }
}

// acc[j] = sum_k w[k] * rows[k][j] over a dense row of n elements: the loop that vectorises.
// Always inlined, so each caller compiles it for its own target (baseline, or AVX2 below).
template <typename T>
[[gnu::always_inline]] inline void v_row_dense(const T* __restrict__ src, int64_t sy, const float* w, int taps, int64_t n,
                 float* __restrict__ acc) {
  const float w0 = w[0];
  for (int64_t j = 0; j < n; ++j) acc[j] = w0 * static_cast<float>(src[j]);
  for (int k = 1; k < taps; ++k) {
    const T* __restrict__ s = src + k * sy;
    const float wk = w[k];
    for (int64_t j = 0; j < n; ++j) acc[j] += wk * static_cast<float>(s[j]);
  }
}

// Output row y of the vertical pass into acc (dense, p.w * p.c floats).
// ---- AVX2 twins of the hot passes (x86-64 only), chosen at run time (detail/cpu.h).
#ifdef HDL_KERNELS_AVX2
#define HDL_RESIZE_AVX2 1

// Loads 4 consecutive elements of `lo` and of `hi` as floats into the low / high 128-bit halves.
__attribute__((target("avx2"))) inline __m256 load4x2(const uint8_t* lo, const uint8_t* hi) {
  uint32_t a, b;
  std::memcpy(&a, lo, 4);
  std::memcpy(&b, hi, 4);
  const __m128i bytes = _mm_cvtsi64_si128(static_cast<int64_t>(uint64_t(a) | uint64_t(b) << 32));
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
}
__attribute__((target("avx2"))) inline __m256 load4x2(const float* lo, const float* hi) {
  return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(lo)), _mm_loadu_ps(hi), 1);
}

// h_row_rgb two output pixels at a time: pixel x in the low four lanes, x + 1 in the high four.
template <typename T>
__attribute__((target("avx2"))) void h_row_rgb_avx2(const T* __restrict__ src, int64_t in_w, const AxisTable& ax,
                                                  float* __restrict__ dst) {
  const int taps = ax.taps;
  auto vector_ok = [&](int64_t x) { return ax.start[x] + taps < in_w; };
  int64_t x = 0;
  for (; x + 1 < ax.out; x += 2) {
    if (!vector_ok(x) || !vector_ok(x + 1)) break;  // the row's last pixels: scalar twin below
    const float* w0 = ax.w + x * taps;
    const float* w1 = w0 + taps;
    const T* s0 = src + static_cast<int64_t>(ax.start[x]) * 3;
    const T* s1 = src + static_cast<int64_t>(ax.start[x + 1]) * 3;
    __m256 even = _mm256_setzero_ps(), odd = _mm256_setzero_ps();
    int k = 0;
    for (; k + 1 < taps; k += 2) {
      const __m256 we = _mm256_insertf128_ps(_mm256_set1_ps(w0[k]), _mm_set1_ps(w1[k]), 1);
      const __m256 wo = _mm256_insertf128_ps(_mm256_set1_ps(w0[k + 1]), _mm_set1_ps(w1[k + 1]), 1);
      even = _mm256_add_ps(even, _mm256_mul_ps(we, load4x2(s0 + k * 3, s1 + k * 3)));
      odd = _mm256_add_ps(odd, _mm256_mul_ps(wo, load4x2(s0 + k * 3 + 3, s1 + k * 3 + 3)));
    }
    if (k < taps) {
      const __m256 we = _mm256_insertf128_ps(_mm256_set1_ps(w0[k]), _mm_set1_ps(w1[k]), 1);
      even = _mm256_add_ps(even, _mm256_mul_ps(we, load4x2(s0 + k * 3, s1 + k * 3)));
    }
    alignas(32) float sum[8];
    _mm256_store_ps(sum, _mm256_add_ps(even, odd));
    float* d = dst + x * 3;
    d[0] = sum[0], d[1] = sum[1], d[2] = sum[2], d[3] = sum[4], d[4] = sum[5], d[5] = sum[6];
  }
  for (; x < ax.out; ++x) {
    const float* w = ax.w + x * taps;
    const T* s = src + static_cast<int64_t>(ax.start[x]) * 3;
    if (!vector_ok(x)) {
      h_pixel_rgb_scalar(s, w, taps, dst + x * 3);
      continue;
    }
    V4f even = {0, 0, 0, 0}, odd = {0, 0, 0, 0};
    int k = 0;
    for (; k + 1 < taps; k += 2) {
      even += w[k] * load4(s + k * 3);
      odd += w[k + 1] * load4(s + k * 3 + 3);
    }
    if (k < taps) even += w[k] * load4(s + k * 3);
    const V4f sum = even + odd;
    for (int c = 0; c < 3; ++c) dst[x * 3 + c] = sum[c];
  }
}

// v_row_dense with 8-lane vectors: the same loop, inlined into an AVX2 function.
template <typename T>
__attribute__((target("avx2"))) void v_row_dense_avx2(const T* __restrict__ src, int64_t sy, const float* w, int taps,
                                                    int64_t n, float* __restrict__ acc) {
  v_row_dense(src, sy, w, taps, n, acc);
}
#endif

template <typename T>
void h_row_strided(const T* src, int64_t sx, int64_t sc, int64_t C, const AxisTable& ax,
                   float* dst) {
  for (int64_t x = 0; x < ax.out; ++x) {
    const float* w = ax.w + x * ax.taps;
    const T* s = src + static_cast<int64_t>(ax.start[x]) * sx;
    for (int64_t c = 0; c < C; ++c) {
      float acc = 0;
      for (int k = 0; k < ax.taps; ++k) acc += w[k] * static_cast<float>(s[k * sx + c * sc]);
      dst[x * C + c] = acc;
    }
  }
}

// Resamples one row of `p` along x into dst (dense, ax.out * C floats).
template <typename T>
void h_row(const Plane<T>& p, const T* src, const AxisTable& ax, float* dst) {
  if (p.dense()) {
    switch (p.c) {
      case 1: return h_row_dense<T, 1>(src, ax, dst);
      case 2: return h_row_dense<T, 2>(src, ax, dst);
      case 3:
#ifdef HDL_RESIZE_AVX2
        if (cpu_has_avx2()) return h_row_rgb_avx2<T>(src, p.w, ax, dst);
#endif
        return h_row_rgb<T>(src, p.w, ax, dst);
      case 4: return h_row_dense<T, 4>(src, ax, dst);
      default: break;
    }
  }
  h_row_strided(src, p.sx, p.sc, p.c, ax, dst);
}

template <typename T>
void v_row(const Plane<T>& p, const AxisTable& ay, int64_t y, float* acc) {
  const float* w = ay.w + y * ay.taps;
  const T* src = p.row(ay.start[y]);
  if (p.dense()) {
#ifdef HDL_RESIZE_AVX2
    if (cpu_has_avx2()) return v_row_dense_avx2(src, p.sy, w, ay.taps, p.w * p.c, acc);
#endif
    return v_row_dense(src, p.sy, w, ay.taps, p.w * p.c, acc);
  }
  for (int64_t x = 0; x < p.w; ++x) {
    for (int64_t c = 0; c < p.c; ++c) {
      const T* s = src + x * p.sx + c * p.sc;
      float a = 0;
      for (int k = 0; k < ay.taps; ++k) a += w[k] * static_cast<float>(s[k * p.sy]);
      acc[x * p.c + c] = a;
    }
  }
}

// Clamps to [0, 255] and rounds half to even (torch.round); adding and subtracting 1.5 * 2^23
// rounds in the current (nearest-even) mode and vectorises on plain SSE2.
inline uint8_t round_u8(float v) {
  v = v < 0.0f ? 0.0f : v;
  v = v > 255.0f ? 255.0f : v;
  return static_cast<uint8_t>(static_cast<int>((v + 12582912.0f) - 12582912.0f));
}

struct RoundU8 {
  uint8_t operator()(float v) const { return round_u8(v); }
};

// Pillow's uint8 rounding: half up (its fixed-point sum plus 1 << 21, shifted right by 22).
inline float round_half_up_u8(float v) {
  v = v < 0.0f ? 0.0f : v;
  v = v > 255.0f ? 255.0f : v;
  return static_cast<float>(static_cast<int>(v + 0.5f));
}

// round_u8 on sixteen values: cvtps rounds half to even (the default MXCSR mode, as the
// 1.5 * 2^23 trick), and the two saturating packs clamp to [0, 255] (NaN converts to INT_MIN,
// hence 0, as round_u8 gives). SSE2 only, so it needs no CPU dispatch.
inline void store16_u8(const float* in, uint8_t* out) {
#if !defined(__SSE2__)
  for (int k = 0; k < 16; ++k) out[k] = round_u8(in[k]);
#else
  const __m128i a = _mm_cvtps_epi32(_mm_loadu_ps(in));
  const __m128i b = _mm_cvtps_epi32(_mm_loadu_ps(in + 4));
  const __m128i c = _mm_cvtps_epi32(_mm_loadu_ps(in + 8));
  const __m128i d = _mm_cvtps_epi32(_mm_loadu_ps(in + 12));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_packus_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d)));
#endif
}

// True when dst's rows are dense (pixels and channels packed), so that a row is one run.
inline bool dense_rows(const TensorView& dst) { return dst.strides[1] == dst.shape[2] && dst.strides[2] == 1; }

template <typename D, typename F>
void store_row_as(const float* row, const TensorView& dst, int64_t y, F convert) {
  D* d = dst.typed<D>() + y * dst.strides[0];
  const int64_t w = dst.shape[1], c = dst.shape[2];
  if (dense_rows(dst)) {
    int64_t j = 0;
    if constexpr (std::is_same_v<D, uint8_t> && std::is_same_v<F, RoundU8>) {
      for (; j + 16 <= w * c; j += 16) store16_u8(row + j, d + j);
    }
    for (; j < w * c; ++j) d[j] = convert(row[j]);
    return;
  }
  for (int64_t x = 0; x < w; ++x) {
    for (int64_t k = 0; k < c; ++k) d[x * dst.strides[1] + k * dst.strides[2]] = convert(row[x * c + k]);
  }
}

inline void store_row(const float* row, const TensorView& dst, int64_t y, bool pil) {
  if (pil) {
    return store_row_as<uint8_t>(row, dst, y, [](float v) { return static_cast<uint8_t>(round_half_up_u8(v)); });
  }
  if (dst.dtype == DType::kU8) return store_row_as<uint8_t>(row, dst, y, RoundU8{});
  store_row_as<float>(row, dst, y, [](float v) { return v; });
}

// The table of one axis into (w, start), from the workspace's cache when it has it.
inline AxisTable make_table(int64_t in, int64_t out, const ResizeOptions& o, std::vector<float>& w,
                            std::vector<int32_t>& start, ResizeWorkspace& ws) {
  const int taps = detail::cached_resize_weights(in, out, o, w, start, ws.tables);
  return {w.data(), start.data(), taps, out};
}

// Both axes change: the horizontal pass (scalar over taps) costs about three times what the
// vertical one (vectorised over the row) does per multiply-add; pick the cheaper order.
inline bool vertical_first(int64_t in_h, int64_t in_w, const AxisTable& ax, const AxisTable& ay) {
  const double out_w = static_cast<double>(ax.out), out_h = static_cast<double>(ay.out);
  const double h_first = 3.0 * in_h * out_w * ax.taps + out_h * out_w * ay.taps;
  const double v_first = out_h * in_w * ay.taps + 3.0 * out_h * out_w * ax.taps;
  return v_first <= h_first;
}

// Workspace vectors only grow: resizing one down and up again would zero-fill it every image.
inline void grow(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

// Runs the passes: `ax` / `ay` null skips that axis. `pil`: Pillow's uint8 semantics (horizontal
// pass first, intermediate rounded half up to uint8, output rounded half up), used for the
// Pillow-only filters and ResizeOptions::pillow so that they agree with Pillow. `v_first`: the order when both axes change
// (ignored under `pil`); the caller decides so that a window uses its full image's order.
template <typename T>
void run_passes(const Plane<T>& p, int64_t in_h, const TensorView& dst, const AxisTable* ax,
                const AxisTable* ay, bool pil, bool v_first, ResizeWorkspace& ws) {
  const int64_t C = p.c, out_h = dst.shape[0], out_w = dst.shape[1];
  grow(ws.row, static_cast<size_t>(out_w * C));
  float* row = ws.row.data();
  if (!ay) {
    for (int64_t y = 0; y < out_h; ++y) {
      h_row(p, p.row(y), *ax, row);
      store_row(row, dst, y, pil);
    }
  } else if (!ax) {
    for (int64_t y = 0; y < out_h; ++y) {
      v_row(p, *ay, y, row);
      store_row(row, dst, y, pil);
    }
  } else if (!pil && v_first) {
    grow(ws.intermediate, static_cast<size_t>(p.w * C));
    const Plane<float> mid{ws.intermediate.data(), p.w * C, C, 1, p.w, C};
    for (int64_t y = 0; y < out_h; ++y) {
      v_row(p, *ay, y, ws.intermediate.data());
      h_row(mid, mid.data, *ax, row);
      store_row(row, dst, y, pil);
    }
  } else {
    const size_t mid_size = static_cast<size_t>(in_h * out_w * C);
    grow(ws.intermediate, mid_size);
    const Plane<float> mid{ws.intermediate.data(), out_w * C, C, 1, out_w, C};
    for (int64_t y = 0; y < in_h; ++y) h_row(p, p.row(y), *ax, ws.intermediate.data() + y * mid.sy);
    if (pil) {
      for (size_t i = 0; i < mid_size; ++i) ws.intermediate[i] = round_half_up_u8(ws.intermediate[i]);
    }
    for (int64_t y = 0; y < out_h; ++y) {
      v_row(mid, *ay, y, row);
      store_row(row, dst, y, pil);
    }
  }
}

// ---- ResizeOptions::pillow on uint8 -> uint8: Pillow's own integer arithmetic (Resample.c's
// ImagingResampleHorizontal_8bpc / Vertical_8bpc), so the result is Pillow's bit for bit. The
// float passes cannot be: Pillow's fixed-point weights put many sums a hair below x.5 (131 * 5/6
// + 128 / 6 is 130.49999992 in 22-bit fixed point), which float32 rounds to x.5 and then up.

// The table's weights (Pillow's fixed point / 2^22, see resize_weights.cc) as Pillow's integers.
inline const int32_t* fixed_weights(const AxisTable& a, std::vector<int32_t>& k) {
  const size_t n = static_cast<size_t>(a.out * a.taps);
  if (k.size() < n) k.resize(n);
  for (size_t i = 0; i < n; ++i) k[i] = static_cast<int32_t>(a.w[i] * 4194304.0f);
  return k.data();
}

// Pillow's clip8: the sum carries 1 << 21 (half up), shifted right by 22, clamped.
inline uint8_t pil_clip8(int32_t v) {
  if (v >= (1 << 22 << 8)) return 255;
  if (v <= 0) return 0;
  return static_cast<uint8_t>(v >> 22);
}

// Integer sums are exact in any order, so the vector paths below give the scalar ones' bytes.
typedef int32_t V4i __attribute__((vector_size(16)));

// clip8 on vector lanes: the shifted sum clamped to [0, 255] (pil_clip8's three cases).
template <typename V>
[[gnu::always_inline]] inline V pil_shift_clamp(V v) {
  v >>= 22;
  v = v < 0 ? 0 : v;
  return v > 255 ? 255 : v;
}

// One row resampled along x: src row `s` (element (x, c) at s[x * sx + c * sc]) into `out`
// (dense, ax.out * C).
inline void pil_h_row(const uint8_t* s, int64_t sx, int64_t sc, int64_t C, const AxisTable& ax,
                      const int32_t* k, uint8_t* out) {
  for (int64_t x = 0; x < ax.out; ++x) {
    const int32_t* kx = k + x * ax.taps;
    const uint8_t* px = s + static_cast<int64_t>(ax.start[x]) * sx;
    for (int64_t c = 0; c < C; ++c) {
      int32_t acc = 1 << 21;
      for (int t = 0; t < ax.taps; ++t) acc += static_cast<int32_t>(px[t * sx + c * sc]) * kx[t];
      out[x * C + c] = pil_clip8(acc);
    }
  }
}

// Four bytes widened to four int32 lanes.
inline V4i widen4(const uint8_t* p) {
#if defined(__SSE2__)
  int32_t word;
  std::memcpy(&word, p, sizeof(word));
  const __m128i z = _mm_setzero_si128();
  return reinterpret_cast<V4i>(_mm_unpacklo_epi16(_mm_unpacklo_epi8(_mm_cvtsi32_si128(word), z), z));
#else
  V4u8 b;
  std::memcpy(&b, p, sizeof(b));
  return __builtin_convertvector(b, V4i);
#endif
}

// pil_h_row on a dense RGB row: a pixel's three channels as four lanes (the fourth reads the
// next pixel's first byte and is dropped), one 4-lane multiply-add per tap. Pixels whose taps
// end at the row's last pixel, where the fourth lane would read past it, take the scalar loop
// (as every pixel before `x` does).
inline void pil_h_row_rgb(const uint8_t* __restrict__ s, int64_t in_w, const AxisTable& ax, const int32_t* k,
                          uint8_t* __restrict__ out, int64_t x = 0) {
  const int taps = ax.taps;
  for (; x < ax.out; ++x) {
    const int32_t* kx = k + x * taps;
    const uint8_t* px = s + static_cast<int64_t>(ax.start[x]) * 3;
    if (ax.start[x] + taps >= in_w) {
      for (int c = 0; c < 3; ++c) {
        int32_t acc = 1 << 21;
        for (int t = 0; t < taps; ++t) acc += static_cast<int32_t>(px[t * 3 + c]) * kx[t];
        out[x * 3 + c] = pil_clip8(acc);
      }
      continue;
    }
    V4i acc = {1 << 21, 1 << 21, 1 << 21, 1 << 21};
    for (int t = 0; t < taps; ++t) acc += kx[t] * widen4(px + t * 3);
    acc = pil_shift_clamp(acc);
    for (int c = 0; c < 3; ++c) out[x * 3 + c] = static_cast<uint8_t>(acc[c]);
  }
}

// Output row y of the vertical pass over a dense plane (n = w * c elements per row), clipped
// straight into `out`, every tap summed in registers.
inline void pil_v_row_dense(const uint8_t* __restrict__ src, int64_t sy, const int32_t* ky, int taps, int64_t n,
                            uint8_t* __restrict__ out, int64_t j = 0) {
  for (; j + 4 <= n; j += 4) {
    V4i acc = {1 << 21, 1 << 21, 1 << 21, 1 << 21};
    for (int t = 0; t < taps; ++t) acc += ky[t] * widen4(src + t * sy + j);
    acc = pil_shift_clamp(acc);
    for (int c = 0; c < 4; ++c) out[j + c] = static_cast<uint8_t>(acc[c]);
  }
  for (; j < n; ++j) {
    int32_t acc = 1 << 21;
    for (int t = 0; t < taps; ++t) acc += static_cast<int32_t>(src[t * sy + j]) * ky[t];
    out[j] = pil_clip8(acc);
  }
}

#ifdef HDL_RESIZE_AVX2
// pil_h_row_rgb two pixels at a time: pixel x in the low four lanes, x + 1 in the high four.
__attribute__((target("avx2"))) inline void pil_h_row_rgb_avx2(const uint8_t* __restrict__ s, int64_t in_w,
                                                              const AxisTable& ax, const int32_t* k,
                                                              uint8_t* __restrict__ out) {
  const int taps = ax.taps;
  auto vector_ok = [&](int64_t x) { return ax.start[x] + taps < in_w; };
  const __m256i half = _mm256_set1_epi32(1 << 21);
  int64_t x = 0;
  for (; x + 1 < ax.out; x += 2) {
    if (!vector_ok(x) || !vector_ok(x + 1)) break;
    const int32_t* k0 = k + x * taps;
    const int32_t* k1 = k0 + taps;
    const uint8_t* s0 = s + static_cast<int64_t>(ax.start[x]) * 3;
    const uint8_t* s1 = s + static_cast<int64_t>(ax.start[x + 1]) * 3;
    __m256i acc = half;
    for (int t = 0; t < taps; ++t) {
      uint32_t a, b;
      std::memcpy(&a, s0 + t * 3, 4);
      std::memcpy(&b, s1 + t * 3, 4);
      const __m256i px = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(uint64_t(a) | uint64_t(b) << 32)));
      const __m256i w = _mm256_inserti128_si256(_mm256_set1_epi32(k0[t]), _mm_set1_epi32(k1[t]), 1);
      acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(px, w));
    }
    // Shifted, then saturated to int16 and to uint8: pil_clip8 on every lane.
    const __m256i v = _mm256_srai_epi32(acc, 22);
    const __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)),
                                           _mm_setzero_si128());
    const uint64_t both = static_cast<uint64_t>(_mm_cvtsi128_si64(bytes));
    const uint32_t p0 = static_cast<uint32_t>(both), p1 = static_cast<uint32_t>(both >> 32);
    std::memcpy(out + x * 3, &p0, 4);  // its fourth byte is pixel x + 1's first, written next
    std::memcpy(out + x * 3 + 3, &p1, 3);
  }
  pil_h_row_rgb(s, in_w, ax, k, out, x);
}

// pil_v_row_dense sixteen columns at a time.
__attribute__((target("avx2"))) inline void pil_v_row_dense_avx2(const uint8_t* __restrict__ src, int64_t sy,
                                                                const int32_t* ky, int taps, int64_t n,
                                                                uint8_t* __restrict__ out) {
  const __m256i half = _mm256_set1_epi32(1 << 21);
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    __m256i lo = half, hi = half;
    for (int t = 0; t < taps; ++t) {
      const uint8_t* r = src + t * sy + j;
      const __m256i w = _mm256_set1_epi32(ky[t]);
      lo = _mm256_add_epi32(lo, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(r))), w));
      hi = _mm256_add_epi32(hi, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(r + 8))), w));
    }
    // packs_epi32 interleaves the 128-bit halves (lo0-3 hi0-3 | lo4-7 hi4-7); the 64-bit
    // permute puts them back in order before the uint8 pack.
    const __m256i w16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(_mm256_srai_epi32(lo, 22), _mm256_srai_epi32(hi, 22)), 0xD8);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j),
                     _mm_packus_epi16(_mm256_castsi256_si128(w16), _mm256_extracti128_si256(w16, 1)));
  }
  pil_v_row_dense(src, sy, ky, taps, n, out, j);
}
#endif

// One row of the horizontal pass: the vector path for dense RGB, else the scalar one.
inline void pil_h(const Plane<uint8_t>& p, int64_t y, const AxisTable& ax, const int32_t* k, uint8_t* out) {
  if (p.dense() && p.c == 3) {
#ifdef HDL_RESIZE_AVX2
    if (cpu_has_avx2()) return pil_h_row_rgb_avx2(p.row(y), p.w, ax, k, out);
#endif
    return pil_h_row_rgb(p.row(y), p.w, ax, k, out);
  }
  pil_h_row(p.row(y), p.sx, p.sc, p.c, ax, k, out);
}

// Output row y of the vertical pass over a plane, clipped into `out` (p.w * p.c bytes, dense);
// `acc`: scratch for the strided case.
inline void pil_v(const Plane<uint8_t>& p, const AxisTable& ay, const int32_t* k, int64_t y, uint8_t* out,
                  int32_t* acc) {
  const int32_t* ky = k + y * ay.taps;
  const uint8_t* src = p.row(ay.start[y]);
  const int64_t n = p.w * p.c;
  if (p.dense()) {
#ifdef HDL_RESIZE_AVX2
    if (cpu_has_avx2()) return pil_v_row_dense_avx2(src, p.sy, ky, ay.taps, n, out);
#endif
    return pil_v_row_dense(src, p.sy, ky, ay.taps, n, out);
  }
  for (int64_t j = 0; j < n; ++j) acc[j] = 1 << 21;
  for (int t = 0; t < ay.taps; ++t) {
    const uint8_t* s = src + t * p.sy;
    for (int64_t x = 0; x < p.w; ++x)
      for (int64_t c = 0; c < p.c; ++c) acc[x * p.c + c] += static_cast<int32_t>(s[x * p.sx + c * p.sc]) * ky[t];
  }
  for (int64_t j = 0; j < n; ++j) out[j] = pil_clip8(acc[j]);
}

// Copies a dense row into row y of a dst whose rows are not dense (dense ones are written in
// place by run_passes_pillow).
inline void pil_store(const uint8_t* row, const TensorView& dst, int64_t y) {
  uint8_t* d = dst.typed<uint8_t>() + y * dst.strides[0];
  const int64_t w = dst.shape[1], c = dst.shape[2];
  for (int64_t x = 0; x < w; ++x)
    for (int64_t k = 0; k < c; ++k) d[x * dst.strides[1] + k * dst.strides[2]] = row[x * c + k];
}

// run_passes for ResizeOptions::pillow with uint8 source and destination: horizontal first,
// the intermediate uint8, as Pillow.
inline void run_passes_pillow(const Plane<uint8_t>& p, int64_t in_h, const TensorView& dst,
                              const AxisTable* ax, const AxisTable* ay, ResizeWorkspace& ws) {
  const int64_t C = p.c, out_h = dst.shape[0], out_w = dst.shape[1];
  const int32_t* kx = ax ? fixed_weights(*ax, ws.fixed_x) : nullptr;
  const int32_t* ky = ay ? fixed_weights(*ay, ws.fixed_y) : nullptr;
  if (ws.bytes.size() < static_cast<size_t>(out_w * C)) ws.bytes.resize(static_cast<size_t>(out_w * C));
  const bool direct = dense_rows(dst);
  auto out_row = [&](int64_t y) { return direct ? dst.typed<uint8_t>() + y * dst.strides[0] : ws.bytes.data(); };
  if (!ay) {
    for (int64_t y = 0; y < out_h; ++y) {
      pil_h(p, y, *ax, kx, out_row(y));
      if (!direct) pil_store(ws.bytes.data(), dst, y);
    }
    return;
  }
  Plane<uint8_t> src = p;
  if (ax) {  // the horizontal pass over the input rows the vertical taps read, into a dense image
    int64_t first = in_h, last = 0;
    for (int64_t y = 0; y < out_h; ++y) {
      first = std::min<int64_t>(first, ay->start[y]);
      last = std::max<int64_t>(last, std::min<int64_t>(in_h, ay->start[y] + ay->taps));
    }
    const size_t mid = static_cast<size_t>(in_h * out_w * C);
    if (ws.mid_u8.size() < mid) ws.mid_u8.resize(mid);
    const Plane<uint8_t> full{ws.mid_u8.data(), out_w * C, C, 1, out_w, C};
    for (int64_t y = first; y < last; ++y) pil_h(p, y, *ax, kx, ws.mid_u8.data() + y * out_w * C);
    src = full;
  }
  if (ws.sums.size() < static_cast<size_t>(out_w * C)) ws.sums.resize(static_cast<size_t>(out_w * C));
  for (int64_t y = 0; y < out_h; ++y) {
    pil_v(src, *ay, ky, y, out_row(y), ws.sums.data());
    if (!direct) pil_store(ws.bytes.data(), dst, y);
  }
}

}  // namespace hdl::kernels::detail
HDL_API_END
