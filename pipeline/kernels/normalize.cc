#include "pipeline/kernels/normalize.h"

#include <algorithm>
#include <array>
#include <string>
#include <type_traits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "pipeline/kernels/detail/cpu.h"
#include "pipeline/kernels/detail/elements.h"
#include "pipeline/kernels/detail/normalize_paths.h"
#ifdef HDL_KERNELS_AVX2
#include <immintrin.h>
#endif

namespace hdl::kernels {
namespace {

constexpr int kMaxLutChannels = 4;

// Storage type of each output dtype and the conversion from the float32 result.
struct F32Out {
  using type = float;
  static float from(float v) { return v; }
};
struct F16Out {
  using type = uint16_t;
  static uint16_t from(float v) { return float_to_half(v); }
};
struct BF16Out {
  using type = uint16_t;
  static uint16_t from(float v) { return float_to_bfloat16(v); }
};

Status check_params(const NormalizeParams& p, int64_t channels) {
  auto ok = [channels](size_t n) { return n <= 1 || static_cast<int64_t>(n) == channels; };
  if (!ok(p.mean.size()) || !ok(p.std.size())) {
    return Status::invalid_argument("normalize: mean/std need 1 or " + std::to_string(channels) +
                                    " values, got " + std::to_string(p.mean.size()) + "/" +
                                    std::to_string(p.std.size()));
  }
  return Status::ok();
}

// The torchvision expression, in float32, in torchvision's order.
struct Normalizer {
  const NormalizeParams& p;
  float mean(int64_t c) const { return p.mean.empty() ? 0.0f : p.mean[p.mean.size() == 1 ? 0 : c]; }
  float stdev(int64_t c) const { return p.std.empty() ? 1.0f : p.std[p.std.size() == 1 ? 0 : c]; }
  float operator()(int64_t c, float x) const { return (x / p.scale - mean(c)) / stdev(c); }
};

// Maps (channel, input value) to the output element: a 256-entry table per channel for uint8
// input (C <= kMaxLutChannels), the expression otherwise.
template <typename S, typename Out>
struct Converter {
  using O = typename Out::type;
  Normalizer norm;
  float fill_value = 0;
  bool use_lut = false;
  std::array<O, kMaxLutChannels * 256> lut;

  Converter(const NormalizeParams& p, int64_t channels, float fill = 0) : norm{p}, fill_value(fill) {
    if constexpr (std::is_same_v<S, uint8_t>) {
      use_lut = channels <= kMaxLutChannels;
      for (int64_t c = 0; use_lut && c < channels; ++c) {
        for (int v = 0; v < 256; ++v) lut[c * 256 + v] = Out::from(norm(c, static_cast<float>(v)));
      }
    }
  }
  O fill(int64_t c) const { return Out::from(norm(c, fill_value)); }
  O operator()(int64_t c, S x) const {
    if constexpr (std::is_same_v<S, uint8_t>) {
      if (use_lut) return lut[c * 256 + x];
    }
    return Out::from(norm(c, static_cast<float>(x)));
  }
};

// uint8 -> uint8: no normalisation.
struct CopyU8 {
  uint8_t fill_value;
  uint8_t fill(int64_t) const { return fill_value; }
  uint8_t operator()(int64_t, uint8_t x) const { return x; }
};

// The inside part [a, b) of one output row of a 3-channel dense uint8 source through the
// per-channel tables: each source pixel is read once and its three results written to their
// planes (CHW, DX = 1) or interleaved (HWC, DX = 3). `s` points at the source pixel of output
// column 0 (mirrored: walking left).
template <int DX, bool kMirror, typename O>
void cmn_row_rgb_lut(const uint8_t* __restrict__ s, O* __restrict__ d0, O* __restrict__ d1,
                     O* __restrict__ d2, const O* __restrict__ lut, int64_t a, int64_t b) {
  const O* l1 = lut + 256;
  const O* l2 = lut + 512;
  for (int64_t x = a; x < b; ++x) {
    const uint8_t* p = kMirror ? s - 3 * x : s + 3 * x;
    d0[x * DX] = lut[p[0]];
    d1[x * DX] = l1[p[1]];
    d2[x * DX] = l2[p[2]];
  }
}

#if defined(__SSE2__)
// The float32 CHW case of cmn_row_rgb_lut with non-temporal stores: a batch is far larger than
// the caches and is read by the consumer long after, so writing around the caches saves reading
// every destination line first (the write-allocate). The stores are fenced by the caller.
template <bool kMirror>
void cmn_row_rgb_lut_stream(const uint8_t* __restrict__ s, float* __restrict__ d0, float* __restrict__ d1,
                            float* __restrict__ d2, const float* __restrict__ lut, int64_t a, int64_t b) {
  const float* l1 = lut + 256;
  const float* l2 = lut + 512;
  auto scalar = [&](int64_t x) {
    const uint8_t* p = kMirror ? s - 3 * x : s + 3 * x;
    d0[x] = lut[p[0]], d1[x] = l1[p[1]], d2[x] = l2[p[2]];
  };
  const auto addr = [](const float* p) { return reinterpret_cast<uintptr_t>(p); };
  int64_t x = a;
  if ((addr(d1) - addr(d0)) % 16 == 0 && (addr(d2) - addr(d0)) % 16 == 0) {
    for (; x < b && addr(d0 + x) % 16 != 0; ++x) scalar(x);
    for (; x + 4 <= b; x += 4) {
      const uint8_t* p = kMirror ? s - 3 * x : s + 3 * x;
      const int step = kMirror ? -3 : 3;
      _mm_stream_ps(d0 + x, _mm_setr_ps(lut[p[0]], lut[p[step]], lut[p[2 * step]], lut[p[3 * step]]));
      _mm_stream_ps(d1 + x, _mm_setr_ps(l1[p[1]], l1[p[step + 1]], l1[p[2 * step + 1]], l1[p[3 * step + 1]]));
      _mm_stream_ps(d2 + x, _mm_setr_ps(l2[p[2]], l2[p[step + 2]], l2[p[2 * step + 2]], l2[p[3 * step + 2]]));
    }
  }
  for (; x < b; ++x) scalar(x);
}
#endif

#ifdef HDL_KERNELS_AVX2
// ---- AVX2 twin of the dense uint8 rows (x86-64 only), chosen at run time (detail/cpu.h) ----
//
// Eight source pixels (C = 3 or 1 bytes each) per step. Byte shuffles regroup their bytes into
// groups of eight output elements: CHW, one group per channel (that channel of the eight
// pixels); HWC, three groups of eight consecutive elements of the interleaved row; mirrored, the
// same with the pixels taken in reverse. Each group is then converted:
//  - float32: the tables' own expression lane by lane, ((float)v / scale - mean[c]) / std[c]:
//    an exact int-to-float conversion, then two divisions and a subtraction, each correctly
//    rounded in the vector unit as in the scalar one and in the same order (no FMA), so the
//    tables' bits. On the 2-core AMD EPYC this beats both the scalar lookups and a gather from
//    the tables.
//  - uint8 (no normalisation): the regrouped bytes themselves.
// float16 / bfloat16 outputs stay on the baseline rows: there, both a gather from their tables
// and the float32 lanes rounded by float_to_half / float_to_bfloat16 redone in integer lanes
// were slower than the scalar lookups (bfloat16 0.8-1.05x, float16 0.35-0.45x).
// The pixels left at a row's end (fewer than eight) go through conv, as on the baseline path.

// The byte of the eight-pixel block that lane l of group g takes, and the channel of that lane.
constexpr int block_byte(int C, bool hwc, bool mirror, int g, int l) {
  if (C == 1) return mirror ? 7 - l : l;
  const int e = 8 * g + l;  // the block's output element
  const int k = hwc ? e / 3 : l, c = hwc ? e % 3 : g;
  return 3 * (mirror ? 7 - k : k) + c;
}
constexpr int lane_channel(int C, bool hwc, int g, int l) { return C == 1 ? 0 : hwc ? (8 * g + l) % 3 : g; }

// pshufb masks of group g: masks[g][0] picks from the block's bytes 0..15, masks[g][1] from
// bytes 16..23 (a 3-channel block is 24 bytes, loaded as 16 + 8 so nothing past it is read).
template <int C, bool kHWC, bool kMirror>
struct BlockShuffle {
  static constexpr auto masks = [] {
    std::array<std::array<std::array<int8_t, 16>, 2>, 3> m{};
    for (int g = 0; g < 3; ++g) {
      for (int h = 0; h < 2; ++h) {
        for (int l = 0; l < 16; ++l) {
          const int b = l < 8 && g < C ? block_byte(C, kHWC, kMirror, g, l) : -1;
          m[g][h][l] = static_cast<int8_t>(b >= 0 && (b >= 16) == (h == 1) ? b - 16 * h : -128);
        }
      }
    }
    return m;
  }();
};

// Per-lane constants of the AVX2 rows, made once per call: lane l of group g converts channel
// lane_channel(C, hwc, g, l).
struct LaneConsts {
  alignas(32) float mean[3][8] = {};
  alignas(32) float stdev[3][8] = {};
  float scale = 1;
};

LaneConsts lane_consts(const Normalizer& n, int C, bool hwc) {
  LaneConsts k;
  for (int g = 0; g < 3; ++g) {
    for (int l = 0; l < 8; ++l) {
      const int c = lane_channel(C, hwc, g, l);
      k.mean[g][l] = n.mean(c);
      k.stdev[g][l] = n.stdev(c);
    }
  }
  k.scale = n.p.scale;
  return k;
}

// Eight-pixel steps of cmn_row_avx2 from column x while they fit before b; returns where they
// stopped. kStream: non-temporal float stores (d + x 16-byte aligned, as are the planes).
template <int C, bool kHWC, bool kMirror, bool kStream, typename O>
__attribute__((target("avx2"))) int64_t cmn_steps_avx2(const uint8_t* __restrict__ s, O* __restrict__ d,
                                                     int64_t plane, const LaneConsts& k, int64_t x, int64_t b) {
  using M = BlockShuffle<C, kHWC, kMirror>;
  __m128i lo_mask[C], hi_mask[C];
  __m256 mean[C], stdev[C];
  for (int g = 0; g < C; ++g) {
    lo_mask[g] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(M::masks[g][0].data()));
    hi_mask[g] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(M::masks[g][1].data()));
    mean[g] = _mm256_load_ps(k.mean[g]);
    stdev[g] = _mm256_load_ps(k.stdev[g]);
  }
  const __m256 scale = _mm256_set1_ps(k.scale);
  for (; x + 8 <= b; x += 8) {
    const uint8_t* p = kMirror ? s - C * (x + 7) : s + C * x;
    __m128i lo, hi = _mm_setzero_si128();
    if constexpr (C == 3) {
      lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      hi = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 16));
    } else {
      lo = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
    }
    for (int g = 0; g < C; ++g) {
      __m128i v = _mm_shuffle_epi8(lo, lo_mask[g]);
      if constexpr (C == 3) v = _mm_or_si128(v, _mm_shuffle_epi8(hi, hi_mask[g]));
      O* out = kHWC ? d + 3 * x + 8 * g : d + g * plane + x;
      if constexpr (std::is_same_v<O, uint8_t>) {
        _mm_storel_epi64(reinterpret_cast<__m128i*>(out), v);
      } else {
        const __m256 f = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v));
        const __m256 r = _mm256_div_ps(_mm256_sub_ps(_mm256_div_ps(f, scale), mean[g]), stdev[g]);
        if constexpr (kStream) {
          _mm_stream_ps(out, _mm256_castps256_ps128(r));
          _mm_stream_ps(out + 4, _mm256_extractf128_ps(r, 1));
        } else {
          _mm256_storeu_ps(out, r);
        }
      }
    }
  }
  return x;
}

// Row part [a, b) of cmn_loop's dense uint8 rows: element (x, c) goes to d[x * DX + c * plane]
// (DX = C for HWC, 1 for CHW); `s` points at the source pixel of output column 0 (mirrored:
// walking left). O is float (Converter with tables) or uint8_t (CopyU8).
template <int C, bool kHWC, bool kMirror, typename O, typename Conv>
void cmn_row_avx2(const uint8_t* __restrict__ s, O* __restrict__ d, int64_t plane, const Conv& conv,
                  const LaneConsts& k, int64_t a, int64_t b) {
  constexpr int DX = kHWC ? C : 1;
  auto scalar = [&](int64_t x) {
    const uint8_t* p = kMirror ? s - C * x : s + C * x;
    for (int c = 0; c < C; ++c) d[x * DX + c * plane] = conv(c, p[c]);
  };
  int64_t x = a;
  if constexpr (std::is_same_v<O, float> && C == 3 && !kHWC) {
    // Non-temporal stores where cmn_row_rgb_lut_stream makes them (same condition; the caller
    // fences).
    const auto addr = [](const float* p) { return reinterpret_cast<uintptr_t>(p); };
    if ((addr(d + plane) - addr(d)) % 16 == 0 && (addr(d + 2 * plane) - addr(d)) % 16 == 0) {
      for (; x < b && addr(d + x) % 16 != 0; ++x) scalar(x);
      for (x = cmn_steps_avx2<C, kHWC, kMirror, true, O>(s, d, plane, k, x, b); x < b; ++x) scalar(x);
      return;
    }
  }
  for (x = cmn_steps_avx2<C, kHWC, kMirror, false, O>(s, d, plane, k, x, b); x < b; ++x) scalar(x);
}

template <typename O, typename Conv>
using RowAvx2 = void (*)(const uint8_t*, O*, int64_t, const Conv&, const LaneConsts&, int64_t, int64_t);

template <typename O, typename Conv>
RowAvx2<O, Conv> pick_row_avx2(int64_t C, bool hwc, bool mirror) {
  if (C == 1) return mirror ? cmn_row_avx2<1, false, true, O, Conv> : cmn_row_avx2<1, false, false, O, Conv>;
  if (hwc) return mirror ? cmn_row_avx2<3, true, true, O, Conv> : cmn_row_avx2<3, true, false, O, Conv>;
  return mirror ? cmn_row_avx2<3, false, true, O, Conv> : cmn_row_avx2<3, false, false, O, Conv>;
}
#endif

// dst(y, x, c) = conv(c, src(top + y, left + x', c)) with x' mirrored if asked, or conv's fill
// outside the image; dst strides are given per (y, x, c) so one loop serves both layouts.
// `avx2`: dense uint8 rows of 3 or 1 channels into float32 or uint8 take the AVX2 twin
// (cmn_row_avx2).
template <typename S, typename O, typename Conv>
void cmn_loop(const ConstTensorView& src, O* dst, const int64_t (&ds)[3], int64_t h, int64_t w,
              const CropMirrorNormalizeOptions& o, const Conv& conv, [[maybe_unused]] bool avx2) {
  const S* sp = static_cast<const S*>(src.data);
  const int64_t H = src.shape[0], W = src.shape[1], C = src.shape[2];
  const int64_t ssx = src.strides[1], ssc = src.strides[2];
  // Output columns [xa, xb) read inside the image (an interval, mirrored or not).
  const int64_t lo = o.mirror ? o.left + w - W : -o.left, hi = o.mirror ? o.left + w : W - o.left;
  const int64_t xa = std::clamp<int64_t>(lo, 0, w), xb = std::clamp<int64_t>(hi, xa, w);
#ifdef HDL_KERNELS_AVX2
  RowAvx2<O, Conv> row_avx2 = nullptr;
  LaneConsts lanes;
  if constexpr (std::is_same_v<S, uint8_t> && !std::is_same_v<O, uint16_t>) {
    bool tabled = true;  // Converter: uint8 input always has tables for C <= kMaxLutChannels
    if constexpr (requires { conv.use_lut; }) tabled = conv.use_lut;
    const bool hwc = C == 3 && ds[1] == 3 && ds[2] == 1;
    if (avx2 && tabled && ssc == 1 && ssx == C && ((C == 3 && (ds[1] == 1 || hwc)) || (C == 1 && ds[1] == 1))) {
      row_avx2 = pick_row_avx2<O, Conv>(C, hwc, o.mirror);
      if constexpr (requires { conv.norm; }) lanes = lane_consts(conv.norm, static_cast<int>(C), hwc);
    }
  }
#endif
  for (int64_t y = 0; y < h; ++y) {
    const int64_t sy = o.top + y;
    const bool row_in = sy >= 0 && sy < H;
    const S* srow = sp + (row_in ? sy : 0) * src.strides[0];
    O* drow = dst + y * ds[0];
#ifdef HDL_KERNELS_AVX2
    if (row_avx2) {
      const int64_t a = row_in ? xa : w, b = row_in ? xb : w;
      for (int64_t c = 0; c < C; ++c) {
        const O f = conv.fill(c);
        O* d = drow + c * ds[2];
        for (int64_t x = 0; x < a; ++x) d[x * ds[1]] = f;
        for (int64_t x = b; x < w; ++x) d[x * ds[1]] = f;
      }
      if constexpr (std::is_same_v<S, uint8_t> && !std::is_same_v<O, uint16_t>) {
        if (a < b) row_avx2(srow + (o.mirror ? (o.left + w - 1) * C : o.left * C), drow, ds[2], conv, lanes, a, b);
      }
      continue;
    }
#endif
    if constexpr (std::is_same_v<S, uint8_t> && requires { conv.lut; }) {
      // The common case (RGB uint8 pixels to a CHW or HWC batch slot): one pass over the row.
      const int64_t dx = ds[1];
      if (C == 3 && ssx == 3 && ssc == 1 && conv.use_lut && (dx == 1 || (dx == 3 && ds[2] == 1))) {
        const int64_t a = row_in ? xa : w, b = row_in ? xb : w;
        O* d[3] = {drow, drow + ds[2], drow + 2 * ds[2]};
        for (int64_t c = 0; c < 3; ++c) {
          const O f = conv.fill(c);
          for (int64_t x = 0; x < a; ++x) d[c][x * dx] = f;
          for (int64_t x = b; x < w; ++x) d[c][x * dx] = f;
        }
        const S* s = srow + (o.mirror ? (o.left + w - 1) * 3 : o.left * 3);
        const O* lut = conv.lut.data();
#if defined(__SSE2__)
        if constexpr (std::is_same_v<O, float>) {
          if (dx == 1) {
            o.mirror ? cmn_row_rgb_lut_stream<true>(s, d[0], d[1], d[2], lut, a, b)
                     : cmn_row_rgb_lut_stream<false>(s, d[0], d[1], d[2], lut, a, b);
            continue;
          }
        }
#endif
        if (dx == 1) {
          o.mirror ? cmn_row_rgb_lut<1, true>(s, d[0], d[1], d[2], lut, a, b)
                   : cmn_row_rgb_lut<1, false>(s, d[0], d[1], d[2], lut, a, b);
        } else {
          o.mirror ? cmn_row_rgb_lut<3, true>(s, d[0], d[1], d[2], lut, a, b)
                   : cmn_row_rgb_lut<3, false>(s, d[0], d[1], d[2], lut, a, b);
        }
        continue;
      }
    }
    for (int64_t c = 0; c < C; ++c) {
      const O f = conv.fill(c);
      O* d = drow + c * ds[2];
      const int64_t a = row_in ? xa : w, b = row_in ? xb : w;
      for (int64_t x = 0; x < a; ++x) d[x * ds[1]] = f;
      if (o.mirror) {
        const S* s = srow + (o.left + w - 1) * ssx + c * ssc;
        for (int64_t x = a; x < b; ++x) d[x * ds[1]] = conv(c, s[-x * ssx]);
      } else {
        const S* s = srow + o.left * ssx + c * ssc;
        for (int64_t x = a; x < b; ++x) d[x * ds[1]] = conv(c, s[x * ssx]);
      }
      for (int64_t x = b; x < w; ++x) d[x * ds[1]] = f;
    }
  }
}

template <typename S>
Status cmn_typed(const ConstTensorView& src, const TensorView& dst, const int64_t (&ds)[3],
                 int64_t h, int64_t w, const CropMirrorNormalizeOptions& o, bool avx2) {
  const int64_t C = src.shape[2];
  switch (dst.dtype) {
    case DType::kF32:
      cmn_loop<S>(src, static_cast<float*>(dst.data), ds, h, w, o, Converter<S, F32Out>(o.norm, C, o.fill), avx2);
      return Status::ok();
    case DType::kF16:
      cmn_loop<S>(src, static_cast<uint16_t*>(dst.data), ds, h, w, o, Converter<S, F16Out>(o.norm, C, o.fill), avx2);
      return Status::ok();
    case DType::kBF16:
      cmn_loop<S>(src, static_cast<uint16_t*>(dst.data), ds, h, w, o, Converter<S, BF16Out>(o.norm, C, o.fill), avx2);
      return Status::ok();
    case DType::kU8:
      if constexpr (std::is_same_v<S, uint8_t>) {
        cmn_loop<S>(src, static_cast<uint8_t*>(dst.data), ds, h, w, o, CopyU8{detail::saturate_cast<uint8_t>(o.fill)},
                    avx2);
        return Status::ok();
      }
      [[fallthrough]];
    default:
      return Status::invalid_argument(std::string("crop_mirror_normalize: cannot write ") +
                                      dtype_name(dst.dtype) + " from " + dtype_name(src.dtype));
  }
}

// Elementwise over a 3-D view, the channel being dimension `axis`.
template <typename S, typename O, typename Conv>
void normalize_loop(const ConstTensorView& src, const TensorView& dst, int axis, const Conv& conv) {
  const S* sp = static_cast<const S*>(src.data);
  O* dp = static_cast<O*>(dst.data);
  for (int64_t a = 0; a < src.shape[0]; ++a) {
    for (int64_t b = 0; b < src.shape[1]; ++b) {
      for (int64_t k = 0; k < src.shape[2]; ++k) {
        const int64_t c = axis == 0 ? a : axis == 1 ? b : k;
        dp[detail::offset3(dst, a, b, k)] = conv(c, sp[detail::offset3(src, a, b, k)]);
      }
    }
  }
}

template <typename S>
Status normalize_typed(const ConstTensorView& src, const TensorView& dst, const NormalizeParams& p,
                       int axis) {
  const int64_t C = src.shape[axis];
  switch (dst.dtype) {
    case DType::kF32: normalize_loop<S, float>(src, dst, axis, Converter<S, F32Out>(p, C)); break;
    case DType::kF16: normalize_loop<S, uint16_t>(src, dst, axis, Converter<S, F16Out>(p, C)); break;
    case DType::kBF16: normalize_loop<S, uint16_t>(src, dst, axis, Converter<S, BF16Out>(p, C)); break;
    default:
      return Status::invalid_argument(std::string("normalize: output must be float32, float16 or "
                                                  "bfloat16, got ") + dtype_name(dst.dtype));
  }
  return Status::ok();
}

}  // namespace

Status crop_mirror_normalize(const ConstTensorView& src, const TensorView& dst,
                             const CropMirrorNormalizeOptions& o) {
  return detail::crop_mirror_normalize_path(src, dst, o, detail::cpu_has_avx2());
}

Status detail::crop_mirror_normalize_path(const ConstTensorView& src, const TensorView& dst,
                                          const CropMirrorNormalizeOptions& o, bool avx2) {
  avx2 = avx2 && cpu_supports_avx2();
  if (src.ndim() != 3 || dst.ndim() != 3 || (src.dtype != DType::kU8 && src.dtype != DType::kF32)) {
    return Status::invalid_argument("crop_mirror_normalize: expected a uint8/float32 HWC source");
  }
  const bool chw = o.layout == Layout::kCHW;
  if (!chw && o.layout != Layout::kHWC) {
    return Status::invalid_argument("crop_mirror_normalize: layout must be CHW or HWC");
  }
  const int64_t C = src.shape[2];
  const int64_t h = chw ? dst.shape[1] : dst.shape[0], w = chw ? dst.shape[2] : dst.shape[1];
  if ((chw ? dst.shape[0] : dst.shape[2]) != C) {
    return Status::invalid_argument("crop_mirror_normalize: dst " + dst.shape.to_string() +
                                    " does not have the " + std::to_string(C) + " channels of src");
  }
  HDL_RETURN_IF_ERROR(check_params(o.norm, C));
  const int64_t ds[3] = {chw ? dst.strides[1] : dst.strides[0], chw ? dst.strides[2] : dst.strides[1],
                         chw ? dst.strides[0] : dst.strides[2]};
  if (src.dtype == DType::kU8) {
    const Status st = cmn_typed<uint8_t>(src, dst, ds, h, w, o, avx2);
#if defined(__SSE2__)
    _mm_sfence();  // orders the non-temporal stores before whatever publishes the batch
#endif
    return st;
  }
  return cmn_typed<float>(src, dst, ds, h, w, o, avx2);
}

Status normalize(const ConstTensorView& src, const TensorView& dst, const NormalizeParams& p,
                 int channel_axis) {
  if (src.ndim() != 3 || src.shape != dst.shape || channel_axis < 0 || channel_axis > 2 ||
      (src.dtype != DType::kU8 && src.dtype != DType::kF32)) {
    return Status::invalid_argument("normalize: expected equal 3-D uint8/float32 views, got " +
                                    src.shape.to_string() + " -> " + dst.shape.to_string());
  }
  HDL_RETURN_IF_ERROR(check_params(p, src.shape[channel_axis]));
  if (src.dtype == DType::kU8) return normalize_typed<uint8_t>(src, dst, p, channel_axis);
  return normalize_typed<float>(src, dst, p, channel_axis);
}

}  // namespace hdl::kernels
