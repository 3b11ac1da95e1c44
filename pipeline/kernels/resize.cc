#include "pipeline/kernels/resize.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <stdexcept>
#include <string>
#include <string_view>

#include "pipeline/kernels/detail/resize_weights.h"

namespace hdl::kernels {
namespace {

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
typedef int32_t V4i __attribute__((vector_size(16)));
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

// Three interleaved channels processed as four lanes (the fourth reads the next pixel's first
// channel and is discarded), so that each tap is one 4-wide multiply-add; two accumulators
// (even / odd taps) halve the dependency chain. Pixels whose taps end at the last input pixel,
// where the fourth lane would read past the row, take the scalar path.
template <typename T>
void h_row_rgb(const T* __restrict__ src, int64_t in_w, const AxisTable& ax, float* __restrict__ dst) {
  for (int64_t x = 0; x < ax.out; ++x) {
    const float* w = ax.w + x * ax.taps;
    const T* s = src + static_cast<int64_t>(ax.start[x]) * 3;
    if (ax.start[x] + ax.taps >= in_w) {
      float acc[3] = {};
      for (int k = 0; k < ax.taps; ++k) {
        for (int c = 0; c < 3; ++c) acc[c] += w[k] * static_cast<float>(s[k * 3 + c]);
      }
      for (int c = 0; c < 3; ++c) dst[x * 3 + c] = acc[c];
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
      case 3: return h_row_rgb<T>(src, p.w, ax, dst);
      case 4: return h_row_dense<T, 4>(src, ax, dst);
      default: break;
    }
  }
  h_row_strided(src, p.sx, p.sc, p.c, ax, dst);
}

// acc[j] = sum_k w[k] * rows[k][j] over a dense row of n elements: the loop that vectorises.
template <typename T>
void v_row_dense(const T* __restrict__ src, int64_t sy, const float* w, int taps, int64_t n,
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
template <typename T>
void v_row(const Plane<T>& p, const AxisTable& ay, int64_t y, float* acc) {
  const float* w = ay.w + y * ay.taps;
  const T* src = p.row(ay.start[y]);
  if (p.dense()) return v_row_dense(src, p.sy, w, ay.taps, p.w * p.c, acc);
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

// round_u8 on four lanes.
inline void store4_u8(const float* in, uint8_t* out) {
  V4f v = load4(in);
  v = v < 0.0f ? V4f{0, 0, 0, 0} : v;
  v = v > 255.0f ? V4f{255, 255, 255, 255} : v;
  v = (v + 12582912.0f) - 12582912.0f;
  const V4i i = __builtin_convertvector(v, V4i);
  for (int k = 0; k < 4; ++k) out[k] = static_cast<uint8_t>(i[k]);
}

template <typename D, typename F>
void store_row_as(const float* row, const TensorView& dst, int64_t y, F convert) {
  D* d = dst.typed<D>() + y * dst.strides[0];
  const int64_t w = dst.shape[1], c = dst.shape[2];
  if (dst.strides[1] == c && dst.strides[2] == 1) {
    int64_t j = 0;
    if constexpr (std::is_same_v<D, uint8_t> && std::is_same_v<F, RoundU8>) {
      for (; j + 4 <= w * c; j += 4) store4_u8(row + j, d + j);
    }
    for (; j < w * c; ++j) d[j] = convert(row[j]);
    return;
  }
  for (int64_t x = 0; x < w; ++x) {
    for (int64_t k = 0; k < c; ++k) d[x * dst.strides[1] + k * dst.strides[2]] = convert(row[x * c + k]);
  }
}

void store_row(const float* row, const TensorView& dst, int64_t y, bool pil) {
  if (pil) {
    return store_row_as<uint8_t>(row, dst, y, [](float v) { return static_cast<uint8_t>(round_half_up_u8(v)); });
  }
  if (dst.dtype == DType::kU8) return store_row_as<uint8_t>(row, dst, y, RoundU8{});
  store_row_as<float>(row, dst, y, [](float v) { return v; });
}

AxisTable make_table(int64_t in, int64_t out, const ResizeOptions& o, std::vector<float>& w,
                     std::vector<int32_t>& start) {
  const int taps = detail::compute_resize_weights(in, out, o.filter, o.antialias, w, start);
  return {w.data(), start.data(), taps, out};
}

// Both axes change: the horizontal pass (scalar over taps) costs about three times what the
// vertical one (vectorised over the row) does per multiply-add; pick the cheaper order.
bool vertical_first(int64_t in_h, int64_t in_w, const AxisTable& ax, const AxisTable& ay) {
  const double out_w = static_cast<double>(ax.out), out_h = static_cast<double>(ay.out);
  const double h_first = 3.0 * in_h * out_w * ax.taps + out_h * out_w * ay.taps;
  const double v_first = out_h * in_w * ay.taps + 3.0 * out_h * out_w * ax.taps;
  return v_first <= h_first;
}

// `pil`: Pillow's uint8 semantics (horizontal pass first, intermediate rounded half up to uint8,
// output rounded half up), used for the Pillow-only filters so that they agree with Pillow.
template <typename T>
void run(const Plane<T>& p, int64_t in_h, const TensorView& dst, const AxisTable* ax,
         const AxisTable* ay, bool pil, ResizeWorkspace& ws) {
  const int64_t C = p.c, out_h = dst.shape[0], out_w = dst.shape[1];
  ws.row.resize(static_cast<size_t>(out_w * C));
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
  } else if (!pil && vertical_first(in_h, p.w, *ax, *ay)) {
    ws.intermediate.resize(static_cast<size_t>(p.w * C));
    const Plane<float> mid{ws.intermediate.data(), p.w * C, C, 1, p.w, C};
    for (int64_t y = 0; y < out_h; ++y) {
      v_row(p, *ay, y, ws.intermediate.data());
      h_row(mid, mid.data, *ax, row);
      store_row(row, dst, y, pil);
    }
  } else {
    ws.intermediate.resize(static_cast<size_t>(in_h * out_w * C));
    const Plane<float> mid{ws.intermediate.data(), out_w * C, C, 1, out_w, C};
    for (int64_t y = 0; y < in_h; ++y) h_row(p, p.row(y), *ax, ws.intermediate.data() + y * mid.sy);
    if (pil) {
      for (float& v : ws.intermediate) v = round_half_up_u8(v);
    }
    for (int64_t y = 0; y < out_h; ++y) {
      v_row(mid, *ay, y, row);
      store_row(row, dst, y, pil);
    }
  }
}

Status check_views(const ConstTensorView& src, const TensorView& dst) {
  if (src.ndim() != 3 || dst.ndim() != 3) {
    return Status::invalid_argument("resize: expected HWC views, got " + src.shape.to_string() +
                                    " -> " + dst.shape.to_string());
  }
  auto ok_type = [](DType t) { return t == DType::kU8 || t == DType::kF32; };
  if (!ok_type(src.dtype) || !ok_type(dst.dtype)) {
    return Status::invalid_argument(std::string("resize: supports uint8 and float32, got ") +
                                    dtype_name(src.dtype) + " -> " + dtype_name(dst.dtype));
  }
  if (src.shape[2] != dst.shape[2] || src.num_elements() == 0 || dst.num_elements() == 0) {
    return Status::invalid_argument("resize: bad shapes " + src.shape.to_string() + " -> " +
                                    dst.shape.to_string());
  }
  if (src.shape[0] > INT32_MAX || src.shape[1] > INT32_MAX) {
    return Status::invalid_argument("resize: input too large " + src.shape.to_string());
  }
  return Status::ok();
}

}  // namespace

ResizeFilter parse_resize_filter(const char* name) {
  const std::string_view n(name);
  if (n == "nearest") return ResizeFilter::kNearest;
  if (n == "bilinear" || n == "linear") return ResizeFilter::kLinear;
  if (n == "bicubic" || n == "cubic") return ResizeFilter::kCubic;
  if (n == "box") return ResizeFilter::kBox;
  if (n == "lanczos" || n == "lanczos3") return ResizeFilter::kLanczos;
  throw std::invalid_argument("unknown resize filter \"" + std::string(n) +
                              "\" (expected nearest, bilinear, bicubic, box or lanczos)");
}

Status resize(const ConstTensorView& src, const TensorView& dst, const ResizeOptions& options,
              ResizeWorkspace& ws) {
  HDL_RETURN_IF_ERROR(check_views(src, dst));
  const int64_t in_h = src.shape[0], in_w = src.shape[1];
  const int64_t out_h = dst.shape[0], out_w = dst.shape[1];
  // A pass over an axis that keeps its size is the identity (for every filter), so skip it;
  // when neither axis changes, one horizontal identity pass copies and converts.
  const bool do_h = in_w != out_w || in_h == out_h;
  const bool do_v = in_h != out_h;
  AxisTable ax, ay;
  if (do_h) ax = make_table(in_w, out_w, options, ws.weights_x, ws.start_x);
  if (do_v) ay = make_table(in_h, out_h, options, ws.weights_y, ws.start_y);
  const AxisTable* pax = do_h ? &ax : nullptr;
  const AxisTable* pay = do_v ? &ay : nullptr;
  const bool pil = dst.dtype == DType::kU8 &&
                   (options.filter == ResizeFilter::kBox || options.filter == ResizeFilter::kLanczos);
  if (src.dtype == DType::kU8) {
    run(plane_of<uint8_t>(src), in_h, dst, pax, pay, pil, ws);
  } else {
    run(plane_of<float>(src), in_h, dst, pax, pay, pil, ws);
  }
  return Status::ok();
}

SizeHW resize_output_size(SizeHW in, std::span<const int64_t> size,
                          std::optional<int64_t> max_size) {
  if (size.size() == 2) {
    if (max_size) {
      throw std::invalid_argument(
          "max_size should only be passed if size specifies the length of the smaller edge");
    }
    if (size[0] <= 0 || size[1] <= 0) throw std::invalid_argument("resize: sizes must be > 0");
    return {size[0], size[1]};
  }
  if (size.size() != 1) {
    throw std::invalid_argument("resize: size must have 1 or 2 elements, got " +
                                std::to_string(size.size()));
  }
  if (size[0] <= 0 || in.h <= 0 || in.w <= 0) throw std::invalid_argument("resize: sizes must be > 0");
  const bool w_short = in.w <= in.h;
  const int64_t short_side = w_short ? in.w : in.h, long_side = w_short ? in.h : in.w;
  // Python's int(a * b / c): exact integer product, correctly rounded true division, truncation.
  int64_t new_short = size[0];
  int64_t new_long = static_cast<int64_t>(static_cast<double>(new_short * long_side) /
                                          static_cast<double>(short_side));
  if (max_size) {
    if (*max_size <= new_short) {
      throw std::invalid_argument("max_size = " + std::to_string(*max_size) +
                                  " must be strictly greater than the requested size for the "
                                  "smaller edge size = " + std::to_string(new_short));
    }
    if (new_long > *max_size) {
      new_short = static_cast<int64_t>(static_cast<double>(*max_size * new_short) /
                                       static_cast<double>(new_long));
      new_long = *max_size;
    }
  }
  return w_short ? SizeHW{new_long, new_short} : SizeHW{new_short, new_long};
}

}  // namespace hdl::kernels
