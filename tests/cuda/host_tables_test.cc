// Host-side preparation of the device kernels (pipeline/kernels/cuda/host_tables.h), checked without a
// GPU: the tables are the CPU kernels' own, and the device algorithms, run on the host with
// these tables (a line-by-line emulation of resize.cu's and normalize.cu's arithmetic), give the
// CPU kernels' results bit for bit on real photos. On a GPU, tests/cuda/kernels_gpu_test.cc
// then only has to show that the device computes what this emulation computes.
#include "pipeline/kernels/cuda/host_tables.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "pipeline/kernels/detail/resize_weights.h"
#include "tests/cuda/cuda_test_util.h"

namespace hdl::kernels::cuda {
namespace {

using ::hdl::testing::corpus_photos;
using ::hdl::testing::diff;

// A dense float HWC image.
struct Img {
  int64_t h = 0, w = 0, c = 0;
  std::vector<float> v;
  Img(int64_t h_, int64_t w_, int64_t c_) : h(h_), w(w_), c(c_), v(static_cast<size_t>(h_ * w_ * c_)) {}
  float& at(int64_t y, int64_t x, int64_t k) { return v[static_cast<size_t>((y * w + x) * c + k)]; }
  float at(int64_t y, int64_t x, int64_t k) const { return v[static_cast<size_t>((y * w + x) * c + k)]; }
};

Img to_float(const ConstTensorView& s) {
  Img m(s.shape[0], s.shape[1], s.shape[2]);
  for (int64_t y = 0; y < m.h; ++y)
    for (int64_t x = 0; x < m.w; ++x)
      for (int64_t k = 0; k < m.c; ++k) {
        const int64_t o = y * s.strides[0] + x * s.strides[1] + k * s.strides[2];
        m.at(y, x, k) = s.dtype == DType::kU8 ? static_cast<const uint8_t*>(s.data)[o]
                                              : static_cast<const float*>(s.data)[o];
      }
  return m;
}

// resize.cu h_pass: two chains (even / odd taps) for dense 3-channel rows, one otherwise.
Img h_pass(const Img& s, const ResizePass& a, bool pairs) {
  Img d(s.h, a.out, s.c);
  for (int64_t y = 0; y < s.h; ++y)
    for (int64_t x = 0; x < a.out; ++x) {
      const float* w = a.weights.data() + x * a.taps;
      const int64_t x0 = a.start[x];
      for (int64_t k = 0; k < s.c; ++k) {
        float acc = 0.0f;
        if (pairs) {
          float even = 0.0f, odd = 0.0f;
          int t = 0;
          for (; t + 1 < a.taps; t += 2) {
            even += w[t] * s.at(y, x0 + t, k);
            odd += w[t + 1] * s.at(y, x0 + t + 1, k);
          }
          if (t < a.taps) even += w[t] * s.at(y, x0 + t, k);
          acc = even + odd;
        } else {
          for (int t = 0; t < a.taps; ++t) acc += w[t] * s.at(y, x0 + t, k);
        }
        d.at(y, x, k) = acc;
      }
    }
  return d;
}

// resize.cu v_pass: the first product, then the others added in order.
Img v_pass(const Img& s, const ResizePass& a) {
  Img d(a.out, s.w, s.c);
  for (int64_t y = 0; y < a.out; ++y) {
    const float* w = a.weights.data() + y * a.taps;
    const int64_t y0 = a.start[y];
    for (int64_t x = 0; x < s.w; ++x)
      for (int64_t k = 0; k < s.c; ++k) {
        float acc = w[0] * s.at(y0, x, k);
        for (int t = 1; t < a.taps; ++t) acc += w[t] * s.at(y0 + t, x, k);
        d.at(y, x, k) = acc;
      }
  }
  return d;
}

float clamp255(float v) { return v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v; }

// The device resize on the host.
Tensor emulate_resize(const ConstTensorView& src, int64_t out_h, int64_t out_w, DType dtype,
                      const ResizeOptions& o) {
  ResizePasses p;
  EXPECT_TRUE(make_resize_passes({src.shape[0], src.shape[1]}, {out_h, out_w}, o, dtype, p).is_ok());
  const Img s = to_float(src);
  const bool src_pairs = s.c == 3 && src.strides[2] == 1 && src.strides[1] == 3;
  Img r(0, 0, 0);
  if (!p.y.resampled) {
    r = h_pass(s, p.x, src_pairs);
  } else if (!p.x.resampled) {
    r = v_pass(s, p.y);
  } else if (p.vertical_first && !p.pil) {
    r = h_pass(v_pass(s, p.y), p.x, s.c == 3);
  } else {
    Img m = h_pass(s, p.x, src_pairs);
    if (p.pil) for (float& v : m.v) v = static_cast<float>(static_cast<int>(clamp255(v) + 0.5f));
    r = v_pass(m, p.y);
  }
  Tensor out = Tensor::empty({r.h, r.w, r.c}, dtype, Layout::kHWC);
  for (size_t i = 0; i < r.v.size(); ++i) {
    if (dtype == DType::kF32) out.typed<float>()[i] = r.v[i];
    else if (p.pil) out.typed<uint8_t>()[i] = static_cast<uint8_t>(static_cast<int>(clamp255(r.v[i]) + 0.5f));
    else out.typed<uint8_t>()[i] = static_cast<uint8_t>(std::nearbyint(clamp255(r.v[i])));  // half to even
  }
  return out;
}

TEST(ResizePassesTest, TablesAreTheCpuKernelsOwn) {
  for (auto filter : {ResizeFilter::kNearest, ResizeFilter::kLinear, ResizeFilter::kCubic,
                      ResizeFilter::kBox, ResizeFilter::kLanczos}) {
    for (bool aa : {true, false}) {
      ResizePasses p;
      ASSERT_TRUE(make_resize_passes({375, 500}, {224, 224}, {filter, aa}, DType::kU8, p).is_ok());
      std::vector<float> w;
      std::vector<int32_t> start;
      const int taps = kernels::detail::compute_resize_weights(500, 224, {filter, aa}, w, start);
      EXPECT_EQ(p.x.taps, taps);
      EXPECT_EQ(p.x.weights, w);
      EXPECT_EQ(p.x.start, start);
      EXPECT_EQ(p.pil, filter == ResizeFilter::kBox || filter == ResizeFilter::kLanczos);
      if (p.pil) EXPECT_FALSE(p.vertical_first);
    }
  }
}

TEST(ResizePassesTest, SkipsAnUnchangedAxisLikeTheCpuKernel) {
  ResizePasses p;
  ASSERT_TRUE(make_resize_passes({100, 80}, {100, 40}, {}, DType::kU8, p).is_ok());
  EXPECT_TRUE(p.x.resampled);
  EXPECT_FALSE(p.y.resampled);
  EXPECT_EQ(p.intermediate_elements(3), 0);
  ASSERT_TRUE(make_resize_passes({100, 80}, {100, 80}, {}, DType::kF32, p).is_ok());
  EXPECT_TRUE(p.x.resampled);  // neither changes: one identity horizontal pass
  EXPECT_FALSE(p.y.resampled);
  ASSERT_TRUE(make_resize_passes({100, 80}, {50, 40}, {}, DType::kU8, p).is_ok());
  EXPECT_EQ(p.intermediate_elements(3), (p.vertical_first ? 50 * 80 : 100 * 40) * 3);
  EXPECT_EQ(make_resize_passes({0, 80}, {50, 40}, {}, DType::kU8, p).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(make_resize_passes({10, 80}, {50, 40}, {}, DType::kI16, p).code(), StatusCode::kInvalidArgument);
}

TEST(ResizePassesTest, DeviceAlgorithmMatchesCpuResizeBitForBitOnPhotos) {
  HDL_REQUIRE_CORPUS();
  const std::vector<Tensor> photos = corpus_photos(3);
  ASSERT_EQ(photos.size(), 3u);
  const ResizeOptions options[] = {{ResizeFilter::kNearest, false}, {ResizeFilter::kLinear, true},
                                   {ResizeFilter::kLinear, false},  {ResizeFilter::kCubic, true},
                                   {ResizeFilter::kCubic, false},   {ResizeFilter::kBox, true},
                                   {ResizeFilter::kLanczos, true}};
  ResizeWorkspace ws;
  int cases = 0;
  for (const Tensor& photo : photos) {
    const int64_t H = photo.shape()[0], W = photo.shape()[1];
    const ConstTensorView views[] = {photo.view(), ConstTensorView(photo.view()).crop_hw(7, 11, H - 20, W - 30)};
    for (const ConstTensorView& src : views) {
      const int64_t h = src.shape[0], w = src.shape[1];
      const SizeHW sizes[] = {{224, 224}, {97, 113}, {h, 160}, {150, w}, {h * 3 / 2, w + 1}, {1, 5}};
      for (const SizeHW& size : sizes)
        for (const ResizeOptions& o : options)
          for (DType dtype : {DType::kU8, DType::kF32}) {
            Tensor cpu = Tensor::empty({size.h, size.w, 3}, dtype, Layout::kHWC);
            ASSERT_TRUE(resize(src, cpu.view(), o, ws).is_ok());
            const Tensor emu = emulate_resize(src, size.h, size.w, dtype, o);
            EXPECT_EQ(diff(cpu, emu).mismatches, 0)
                << src.shape.to_string() << " -> " << size.h << "x" << size.w << " filter "
                << int(o.filter) << " aa " << o.antialias << " " << dtype_name(dtype) << ": " << diff(cpu, emu);
            ++cases;
          }
    }
  }
  std::cout << "[ resize passes ] " << cases << " cases bit-exact\n";
}

NormalizeParams imagenet() {
  NormalizeParams p;
  p.mean = {0.485f, 0.456f, 0.406f};
  p.std = {0.229f, 0.224f, 0.225f};
  return p;
}

TEST(CmnTableTest, EveryEntryIsTheCpuKernelsResult) {
  // Row x holds (x, 255 - x, 7x mod 256): every value once in each channel.
  Tensor row = Tensor::empty({1, 256, 3}, DType::kU8, Layout::kHWC);
  for (int x = 0; x < 256; ++x) {
    row.typed<uint8_t>()[x * 3] = static_cast<uint8_t>(x);
    row.typed<uint8_t>()[x * 3 + 1] = static_cast<uint8_t>(255 - x);
    row.typed<uint8_t>()[x * 3 + 2] = static_cast<uint8_t>(x * 7 % 256);
  }
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kU8}) {
    CropMirrorNormalizeOptions o;
    o.layout = Layout::kHWC, o.norm = imagenet(), o.fill = 17.5f, o.top = 0, o.left = 0;
    CmnTable table;
    ASSERT_TRUE(make_cmn_table(3, dtype, o.norm, o.fill, table).is_ok());
    Tensor cpu = Tensor::empty({2, 256, 3}, dtype, Layout::kHWC);  // row 1 is outside: fill
    ASSERT_TRUE(crop_mirror_normalize(row.view(), cpu.view(), o).is_ok());
    const size_t size = dtype_size(dtype);
    for (int x = 0; x < 256; ++x)
      for (int c = 0; c < 3; ++c) {
        const int v = row.typed<uint8_t>()[x * 3 + c];
        const auto* got = table.bytes.data() + (c * 257 + v) * size;
        const auto* want = static_cast<const uint8_t*>(cpu.data()) + (x * 3 + c) * size;
        ASSERT_EQ(std::memcmp(got, want, size), 0) << dtype_name(dtype) << " c " << c << " v " << v;
        const auto* fill = static_cast<const uint8_t*>(cpu.data()) + (256 * 3 + x * 3 + c) * size;
        ASSERT_EQ(std::memcmp(table.bytes.data() + (c * 257 + 256) * size, fill, size), 0) << dtype_name(dtype);
      }
  }
  CmnTable t;
  NormalizeParams bad = imagenet();
  bad.mean = {1, 2};
  EXPECT_EQ(make_cmn_table(3, DType::kF32, bad, 0, t).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(make_cmn_table(3, DType::kI32, imagenet(), 0, t).code(), StatusCode::kInvalidArgument);
}

TEST(CmnTableTest, DeviceLookupMatchesCpuKernelOnPhotos) {
  HDL_REQUIRE_CORPUS();
  const std::vector<Tensor> photos = corpus_photos(4);
  const int64_t H = 224, W = 224;
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16})
    for (size_t i = 0; i < photos.size(); ++i) {
      const ConstTensorView src = photos[i].view();
      CropMirrorNormalizeOptions o;
      o.norm = imagenet(), o.fill = 3, o.mirror = i % 2 == 1, o.layout = Layout::kCHW;
      o.top = i == 2 ? -10 : 20, o.left = src.shape[1] - W + (i == 3 ? 15 : -5);  // some windows leave the image
      Tensor cpu = Tensor::empty({3, H, W}, dtype, Layout::kCHW);
      ASSERT_TRUE(crop_mirror_normalize(src, cpu.view(), o).is_ok());
      CmnTable t;
      ASSERT_TRUE(make_cmn_table(3, dtype, o.norm, o.fill, t).is_ok());
      // normalize.cu's kernel on the host.
      Tensor emu = Tensor::empty({3, H, W}, dtype, Layout::kCHW);
      const size_t size = dtype_size(dtype);
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) {
          const int64_t row = o.top + y, col = o.left + (o.mirror ? W - 1 - x : x);
          const bool inside = row >= 0 && row < src.shape[0] && col >= 0 && col < src.shape[1];
          for (int64_t c = 0; c < 3; ++c) {
            const int v = inside ? static_cast<const uint8_t*>(src.data)[row * src.strides[0] + col * 3 + c] : 256;
            std::memcpy(static_cast<uint8_t*>(emu.data()) + ((c * H + y) * W + x) * size,
                        t.bytes.data() + (c * 257 + v) * size, size);
          }
        }
      EXPECT_EQ(diff(cpu, emu).mismatches, 0) << dtype_name(dtype) << " photo " << i;
    }
}

}  // namespace
}  // namespace hdl::kernels::cuda
