#include "pipeline/kernels/detail/resize_weights.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <unordered_map>

namespace hdl::kernels::detail {
namespace {

// The filters below reproduce the reference implementations' arithmetic types on purpose
// (ATen's aa filters take and return float but compute some terms in double; Pillow's are
// double throughout), so that the weights agree to the last bit where that is cheap.

float aten_linear(float x) {
  if (x < 0.0) x = -x;
  if (x < 1.0) return 1.0 - x;
  return 0.0;
}

float aten_cubic_aa(float x) {
  const double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

// Pillow's bilinear_filter and bicubic_filter (Resample.c; a = -0.5), in double.
double pil_bilinear(double x) {
  if (x < 0.0) x = -x;
  if (x < 1.0) return 1.0 - x;
  return 0.0;
}

double pil_bicubic(double x) {
  const double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

double pil_box(double x) { return (x > -0.5 && x <= 0.5) ? 1.0 : 0.0; }

double pil_sinc(double x) {
  if (x == 0.0) return 1.0;
  x *= std::numbers::pi;
  return std::sin(x) / x;
}

double pil_lanczos(double x) { return (-3.0 <= x && x < 3.0) ? pil_sinc(x) * pil_sinc(x / 3) : 0.0; }

// Sizes the table and returns a pointer to row i's `taps` weights after zeroing them.
float* table_row(std::vector<float>& w, int taps, int64_t i) {
  float* row = w.data() + i * taps;
  std::fill(row, row + taps, 0.0f);
  return row;
}

// Pillow's normalize_coeffs_8bpc: a weight as its 22-bit fixed-point integer (rounded half away
// from zero), here divided back by 2^22, which float holds exactly (|w| < 2). The uint8 passes
// then use Pillow's own weights; only the float sums differ from its integer ones.
float pil_fixed_point(double w) {
  constexpr double kOne = double(1 << 22);
  const double k = w < 0 ? std::trunc(-0.5 + w * kOne) : std::trunc(0.5 + w * kOne);
  return static_cast<float>(k / kOne);
}

// ATen `_compute_weights_aa` / Pillow `precompute_coeffs`, computed in T (float for ATen,
// double for Pillow) with the same mixed-precision expressions; `fixed22`: Pillow's weights
// rounded to its 22-bit fixed point (pil_fixed_point).
template <typename T, typename Filter>
int aa_table(int64_t in, int64_t out, double filter_support, bool antialias, Filter filter,
             std::vector<float>& w, std::vector<int32_t>& start, bool fixed22 = false) {
  const T scale = static_cast<T>(in) / static_cast<T>(out);
  const bool widen = antialias && scale >= 1.0;
  const T support = widen ? static_cast<T>(filter_support * scale) : static_cast<T>(filter_support);
  const T invscale = widen ? static_cast<T>(1.0 / scale) : static_cast<T>(1.0);
  auto span = [&](int64_t i, int64_t& xmin, int64_t& xsize) {
    const T center = static_cast<T>(scale * (i + 0.5));
    xmin = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
    xsize = std::max<int64_t>(
        std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in) - xmin, 1);
    xmin = std::min(xmin, in - 1);
    xsize = std::min(xsize, in - xmin);
    return center;
  };
  int64_t taps = 1;
  for (int64_t i = 0, xmin, xsize; i < out; ++i) {
    span(i, xmin, xsize);
    taps = std::max(taps, xsize);
  }
  w.resize(static_cast<size_t>(out * taps));
  start.resize(static_cast<size_t>(out));
  for (int64_t i = 0, xmin, xsize; i < out; ++i) {
    const T center = span(i, xmin, xsize);
    auto weight = [&](int64_t j) { return filter(static_cast<T>((j + xmin - center + 0.5) * invscale)); };
    T total = 0;
    for (int64_t j = 0; j < xsize; ++j) total += weight(j);
    const int64_t first = std::min(xmin, in - taps);
    start[i] = static_cast<int32_t>(first);
    float* row = table_row(w, static_cast<int>(taps), i) + (xmin - first);
    for (int64_t j = 0; j < xsize; ++j) {
      const T v = total != 0.0 ? weight(j) / total : weight(j);
      row[j] = fixed22 ? pil_fixed_point(static_cast<double>(v)) : static_cast<float>(v);
    }
  }
  return static_cast<int>(taps);
}

// Places (index, weight) taps that may repeat a clamped border index into a table row of
// `taps` contiguous input pixels.
void fold_taps(int64_t in, int taps, int64_t i, const int64_t* idx, const float* wt, int n,
               std::vector<float>& w, std::vector<int32_t>& start) {
  const int64_t lo = *std::min_element(idx, idx + n);
  const int64_t first = std::clamp<int64_t>(lo, 0, in - taps);
  start[i] = static_cast<int32_t>(first);
  float* row = table_row(w, taps, i);
  for (int k = 0; k < n; ++k) row[idx[k] - first] += wt[k];
}

// torch.nn.functional.interpolate(mode='bilinear', align_corners=False), no antialias.
int linear_table(int64_t in, int64_t out, std::vector<float>& w, std::vector<int32_t>& start) {
  const int taps = static_cast<int>(std::min<int64_t>(in, 2));
  w.resize(static_cast<size_t>(out * taps));
  start.resize(static_cast<size_t>(out));
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  for (int64_t i = 0; i < out; ++i) {
    float real = static_cast<float>(scale * (i + 0.5) - 0.5);
    if (real < 0) real = 0;
    const int64_t i0 = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
    const float l1 = std::clamp(real - static_cast<float>(i0), 0.0f, 1.0f);
    const int64_t idx[2] = {i0, i0 + (i0 < in - 1 ? 1 : 0)};
    const float wt[2] = {1.0f - l1, l1};
    fold_taps(in, taps, i, idx, wt, 2, w, start);
  }
  return taps;
}

// torch bicubic, align_corners=False, no antialias: a = -0.75, border indices clamped.
int cubic_table(int64_t in, int64_t out, std::vector<float>& w, std::vector<int32_t>& start) {
  const int taps = static_cast<int>(std::min<int64_t>(in, 4));
  w.resize(static_cast<size_t>(out * taps));
  start.resize(static_cast<size_t>(out));
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  const float a = -0.75f;
  auto conv1 = [a](float x) { return ((a + 2) * x - (a + 3)) * x * x + 1; };
  auto conv2 = [a](float x) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; };
  for (int64_t i = 0; i < out; ++i) {
    const float real = static_cast<float>(scale * (i + 0.5) - 0.5);
    const int64_t i0 = static_cast<int64_t>(std::floor(real));
    const float t = real - static_cast<float>(i0);
    const float t2 = static_cast<float>(1.0 - t);
    const float wt[4] = {conv2(static_cast<float>(t + 1.0)), conv1(t), conv1(t2),
                         conv2(static_cast<float>(t2 + 1.0))};
    int64_t idx[4];
    for (int k = 0; k < 4; ++k) idx[k] = std::clamp<int64_t>(i0 - 1 + k, 0, in - 1);
    fold_taps(in, taps, i, idx, wt, 4, w, start);
  }
  return taps;
}

// torch 'nearest': src = min(floor(dst * (float)in / out), in - 1), with its two shortcuts.
int nearest_table(int64_t in, int64_t out, std::vector<float>& w, std::vector<int32_t>& start) {
  w.assign(static_cast<size_t>(out), 1.0f);
  start.resize(static_cast<size_t>(out));
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  for (int64_t i = 0; i < out; ++i) {
    int64_t s;
    if (out == in) {
      s = i;
    } else if (out == 2 * in) {
      s = i >> 1;
    } else {
      s = std::min(static_cast<int64_t>(std::floor(static_cast<float>(i) * scale)), in - 1);
    }
    start[i] = static_cast<int32_t>(s);
  }
  return 1;
}

// Pillow's NEAREST resize (ImagingScaleAffine, as warp.cc's scale_affine): src = (int)xo with
// xo = (i + 0.5) * in / out accumulated step by step in double, as Pillow does.
int pil_nearest_table(int64_t in, int64_t out, std::vector<float>& w, std::vector<int32_t>& start) {
  w.assign(static_cast<size_t>(out), 1.0f);
  start.resize(static_cast<size_t>(out));
  const double step = static_cast<double>(in) / static_cast<double>(out);
  double xo = step * 0.5;
  for (int64_t i = 0; i < out; ++i) {
    const int64_t s = xo < 0.0 ? 0 : static_cast<int64_t>(xo);
    start[i] = static_cast<int32_t>(std::min(s, in - 1));  // Pillow leaves such a pixel unset
    xo += step;
  }
  return 1;
}

// PIL.Image.resize's tables (ResizeOptions::pillow): always widened, in double, fixed point.
int pillow_table(int64_t in, int64_t out, ResizeFilter filter, std::vector<float>& weights,
                 std::vector<int32_t>& start) {
  switch (filter) {
    case ResizeFilter::kNearest: return pil_nearest_table(in, out, weights, start);
    case ResizeFilter::kLinear: return aa_table<double>(in, out, 1.0, true, pil_bilinear, weights, start, true);
    case ResizeFilter::kCubic: return aa_table<double>(in, out, 2.0, true, pil_bicubic, weights, start, true);
    case ResizeFilter::kBox: return aa_table<double>(in, out, 0.5, true, pil_box, weights, start, true);
    case ResizeFilter::kLanczos: return aa_table<double>(in, out, 3.0, true, pil_lanczos, weights, start, true);
  }
  return 0;
}

}  // namespace

int compute_resize_weights(int64_t in, int64_t out, const ResizeOptions& options,
                           std::vector<float>& weights, std::vector<int32_t>& start) {
  const ResizeFilter filter = options.filter;
  const bool antialias = options.antialias;
  if (options.pillow) return pillow_table(in, out, filter, weights, start);
  switch (filter) {
    case ResizeFilter::kNearest:
      return nearest_table(in, out, weights, start);
    case ResizeFilter::kLinear:
      if (!antialias) return linear_table(in, out, weights, start);
      return aa_table<float>(in, out, 1.0, true, aten_linear, weights, start);
    case ResizeFilter::kCubic:
      if (!antialias) return cubic_table(in, out, weights, start);
      return aa_table<float>(in, out, 2.0, true, aten_cubic_aa, weights, start);
    case ResizeFilter::kBox:
      return aa_table<double>(in, out, 0.5, antialias, pil_box, weights, start);
    case ResizeFilter::kLanczos:
      return aa_table<double>(in, out, 3.0, antialias, pil_lanczos, weights, start);
  }
  return 0;
}

struct WeightTableCache {
  struct Table {
    int taps = 0;
    std::vector<float> weights;
    std::vector<int32_t> start;
  };
  std::unordered_map<uint64_t, Table> tables;
  size_t bytes = 0;
  static constexpr size_t kMaxBytes = size_t(4) << 20;
};

void WeightTableCacheDeleter::operator()(WeightTableCache* c) const { delete c; }

int cached_resize_weights(int64_t in, int64_t out, const ResizeOptions& options,
                          std::vector<float>& weights, std::vector<int32_t>& start,
                          std::unique_ptr<WeightTableCache, WeightTableCacheDeleter>& cache) {
  if (in >= (int64_t(1) << 28) || out >= (int64_t(1) << 28))
    return compute_resize_weights(in, out, options, weights, start);
  if (!cache) cache.reset(new WeightTableCache);
  // filter: bits 1-3 (5 values); pillow: bit 4.
  const uint64_t key = uint64_t(in) << 36 | uint64_t(out) << 8 | uint64_t(options.pillow ? 1 : 0) << 4 |
                       uint64_t(options.filter) << 1 | (options.antialias ? 1 : 0);
  auto it = cache->tables.find(key);
  if (it == cache->tables.end()) {
    WeightTableCache::Table t;
    t.taps = compute_resize_weights(in, out, options, t.weights, t.start);
    const size_t bytes = t.weights.size() * sizeof(float) + t.start.size() * sizeof(int32_t) + 64;
    if (cache->bytes + bytes > WeightTableCache::kMaxBytes) {
      cache->tables.clear();
      cache->bytes = 0;
    }
    cache->bytes += bytes;
    it = cache->tables.emplace(key, std::move(t)).first;
  }
  weights.assign(it->second.weights.begin(), it->second.weights.end());
  start.assign(it->second.start.begin(), it->second.start.end());
  return it->second.taps;
}

}  // namespace hdl::kernels::detail
