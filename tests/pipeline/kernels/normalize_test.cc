// crop_mirror_normalize / normalize / cast vs torchvision F.crop + F.hflip + ToTensor +
// F.normalize (+ .half() / .bfloat16()) on real photos: exact (float32 bit-exact, i.e. well
// within the required 1e-6 relative).
#include "pipeline/kernels/normalize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "decoders/decoder_set.h"
#include "pipeline/kernels/detail/cpu.h"
#include "pipeline/kernels/detail/normalize_paths.h"
#include "tests/pipeline/kernels/reference_data.h"
#include "tests/test_util.h"

namespace hdl::kernels {
namespace {

using ::hdl::testing::references;
using ::hdl::testing::RefEntry;

const NormalizeParams kImageNet{{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}, 255.0f};

void expect_exact(const ConstTensorView& got, const RefEntry& c) {
  const auto d = ::hdl::testing::diff(got, c.view());
  EXPECT_EQ(d.max_abs, 0) << describe(c) << ": " << d;
  EXPECT_LE(d.max_rel, 1e-6) << describe(c);
}

TEST(CropMirrorNormalizeTest, MatchesTorchvisionAllDtypesAndLayouts) {
  HDL_REQUIRE_REFERENCES();
  int n = 0;
  for (const RefEntry* c : references().cases("cmn")) {
    CropMirrorNormalizeOptions o;
    o.top = c->i("top");
    o.left = c->i("left");
    o.mirror = c->i("mirror") != 0;
    o.layout = c->has("layout", "CHW") ? Layout::kCHW : Layout::kHWC;
    o.norm = kImageNet;
    // Write into a slot of a wider batch-like buffer to exercise output strides.
    Shape big = c->shape();
    big[2] += 5;
    Tensor buf = Tensor::empty(big, c->dtype());
    TensorView slot = buf.view();
    slot.shape = c->shape();
    const Status st = crop_mirror_normalize(references().source(c->get("src")), slot, o);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    expect_exact(slot, *c);
    ++n;
  }
  EXPECT_EQ(n, 20);
}

TEST(CropMirrorNormalizeTest, FillsOutsideTheImageAndRejectsBadParams) {
  uint8_t px[2 * 2 * 1] = {10, 20, 30, 40};
  uint8_t u8[3 * 3];
  CropMirrorNormalizeOptions o;
  o.top = 1;
  o.left = -1;
  o.mirror = true;
  o.fill = 7;
  ASSERT_TRUE(crop_mirror_normalize(ConstTensorView(px, {2, 2, 1}, DType::kU8),
                                    TensorView(u8, {1, 3, 3}, DType::kU8), o).is_ok());
  // Window rows 1..3, cols -1..1: [7 30 40] [7 7 7] [7 7 7], mirrored left-right.
  EXPECT_EQ(std::vector<int>(u8, u8 + 9), (std::vector<int>{40, 30, 7, 7, 7, 7, 7, 7, 7}));
  float out[3 * 3 * 3];
  o = {};
  o.norm.mean = {1, 2};
  uint8_t rgb[4 * 4 * 3] = {};
  EXPECT_EQ(crop_mirror_normalize(ConstTensorView(rgb, {4, 4, 3}, DType::kU8),
                                  TensorView(out, {3, 3, 3}, DType::kF32), o).code(),
            StatusCode::kInvalidArgument);
}

// ---- The AVX2 twin of the uint8 rows against the baseline path, byte for byte ----
// (detail/normalize_paths.h runs either path in one process; the torchvision comparisons above
// run on the path this CPU takes, and again on the baseline under CTest's kernels_without_avx2.)

struct CmnCase {
  DType out = DType::kF32;
  CropMirrorNormalizeOptions o;
  int64_t h = 0, w = 0;
  int64_t pad = 0;     // extra elements per innermost dst row: a slot of a wider buffer
  int64_t offset = 0;  // elements before the slot: every alignment of the output
};

// Runs `c` on both paths into two buffers prefilled alike and returns where they differ first
// ("" if nowhere, the bytes outside the slot included).
std::string compare_paths(const ConstTensorView& src, const CmnCase& c) {
  const int64_t C = src.shape[2];
  const bool chw = c.o.layout == Layout::kCHW;
  Shape shape = chw ? Shape{C, c.h, c.w} : Shape{c.h, c.w, C};
  const int64_t inner = shape[2] + c.pad;
  const Shape strides = {shape[1] * inner, inner, 1};
  const size_t esize = dtype_size(c.out);
  const size_t bytes = (c.offset + shape[0] * strides[0]) * esize;
  std::vector<uint8_t> buf[2];
  const uint8_t* base[2];
  for (int path = 0; path < 2; ++path) {
    buf[path].assign(bytes + 64, 0xa5);
    // A 64-byte aligned base, then the element offset.
    uint8_t* b = buf[path].data() + (64 - reinterpret_cast<uintptr_t>(buf[path].data()) % 64) % 64;
    base[path] = b;
    TensorView dst(b + c.offset * esize, shape, c.out, c.o.layout);
    dst.strides = strides;
    const Status st = detail::crop_mirror_normalize_path(src, dst, c.o, path == 1);
    if (!st.is_ok()) return "path " + std::to_string(path) + ": " + st.to_string();
  }
  for (size_t i = 0; i < bytes; ++i) {
    if (base[0][i] != base[1][i]) {
      return "byte " + std::to_string(i) + ": baseline " + std::to_string(base[0][i]) + ", avx2 " +
             std::to_string(base[1][i]);
    }
  }
  return "";
}

std::string describe(const ConstTensorView& src, const CmnCase& c) {
  std::string s = src.shape.to_string() + " -> " + dtype_name(c.out) +
                  (c.o.layout == Layout::kCHW ? " CHW " : " HWC ") + std::to_string(c.h) + "x" +
                  std::to_string(c.w) + " at (" + std::to_string(c.o.top) + ", " +
                  std::to_string(c.o.left) + ")" + (c.o.mirror ? " mirrored" : "") +
                  " fill " + std::to_string(c.o.fill) + " pad " + std::to_string(c.pad) + " offset " +
                  std::to_string(c.offset) + " scale " + std::to_string(c.o.norm.scale) + " mean/std";
  for (float m : c.o.norm.mean) s += " " + std::to_string(m);
  s += " /";
  for (float d : c.o.norm.std) s += " " + std::to_string(d);
  return s;
}

constexpr DType kOutDtypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kU8};

TEST(CropMirrorNormalizeTest, Avx2RowsMatchTheBaselineOnRandomCases) {
  if (!detail::cpu_supports_avx2()) GTEST_SKIP() << "this CPU has no AVX2";
  std::mt19937 rng(20261128);
  auto uniform = [&rng](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  auto real = [&rng](float lo, float hi) { return std::uniform_real_distribution<float>(lo, hi)(rng); };
  int vector_rows = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    // 1 and 3 channels take the AVX2 rows; 2 and 4 check that the others still work.
    const int64_t C = iter % 10 == 9 ? 2 + 2 * (iter / 10 % 2) : iter % 2 ? 3 : 1;
    const int64_t H = uniform(1, 40), W = uniform(1, 90);
    // Sometimes a window of a wider image: rows further apart than W * C.
    const int64_t full_w = W + (uniform(0, 3) == 0 ? uniform(1, 7) : 0);
    std::vector<uint8_t> px(static_cast<size_t>(H * full_w * C));
    for (auto& v : px) v = static_cast<uint8_t>(uniform(0, 255));
    const ConstTensorView src =
        ConstTensorView(px.data(), {H, full_w, C}, DType::kU8, Layout::kHWC).crop_hw(0, 0, H, W);
    CmnCase c;
    c.out = kOutDtypes[uniform(0, 3)];
    c.o.layout = uniform(0, 1) ? Layout::kCHW : Layout::kHWC;
    c.o.mirror = uniform(0, 1) != 0;
    c.h = uniform(1, 24);
    c.w = uniform(1, 100);
    // Windows inside, across any edge, and wholly outside.
    c.o.top = uniform(-c.h, H + 2);
    c.o.left = uniform(0, 2) ? uniform(0, std::max<int64_t>(0, W - c.w)) : uniform(-c.w - 2, W + 2);
    c.o.fill = uniform(0, 1) ? 0.0f : static_cast<float>(uniform(0, 300)) - 20.5f;
    c.pad = uniform(0, 1) ? 0 : uniform(1, 9);
    c.offset = uniform(0, 7);
    auto values = [&](float lo, float hi) {
      const int64_t n = std::vector<int64_t>{0, 1, C}[uniform(0, 2)];
      std::vector<float> v(static_cast<size_t>(n));
      for (auto& x : v) x = real(lo, hi);
      return v;
    };
    c.o.norm.mean = values(-1.0f, 2.0f);
    c.o.norm.std = values(0.01f, 3.0f);
    c.o.norm.scale = std::vector<float>{255.0f, 1.0f, 127.5f, real(0.1f, 1000.0f)}[uniform(0, 3)];
    if (iter % 8 == 7) {
      // Extremes: infinities and NaN (x / 0), overflow, results down in the subnormals, negatives.
      const std::vector<float> odd = {0.0f, -0.0f, 1e-38f, 3e38f, 1e30f, -1e-30f, -7.0f, 1e-45f};
      auto pick = [&] { return odd[uniform(0, static_cast<int64_t>(odd.size()) - 1)]; };
      if (uniform(0, 1)) c.o.norm.scale = pick();
      for (auto& m : c.o.norm.mean) if (uniform(0, 1)) m = pick();
      for (auto& d : c.o.norm.std) if (uniform(0, 1)) d = pick();
    }
    vector_rows += (C == 1 || C == 3) && c.o.left + c.w > 0 && c.o.left < W && c.w >= 8;
    const std::string diff = compare_paths(src, c);
    ASSERT_EQ(diff, "") << describe(src, c);
  }
  EXPECT_GT(vector_rows, 1000);
}

TEST(CropMirrorNormalizeTest, Avx2RowsMatchTheBaselineOnAPhoto) {
  HDL_REQUIRE_CORPUS();
  if (!detail::cpu_supports_avx2()) GTEST_SKIP() << "this CPU has no AVX2";
  std::vector<std::filesystem::path> files;
  for (const auto& d : std::filesystem::directory_iterator(::hdl::testing::corpus_dir() / "imagenet" / "train")) {
    for (const auto& f : std::filesystem::directory_iterator(d.path())) files.push_back(f.path());
  }
  ASSERT_FALSE(files.empty());
  std::sort(files.begin(), files.end());
  const auto bytes = ::hdl::testing::read_file(files.front());
  DecoderSet decoders;
  auto shape = decoders.output_shape(bytes, DecodeRequest{});
  ASSERT_TRUE(shape.is_ok()) << files.front();
  Tensor photo = Tensor::empty(*shape, DType::kU8, Layout::kHWC);
  ASSERT_TRUE(decoders.decode(bytes, DecodeRequest{}, photo.view()).is_ok()) << files.front();
  const int64_t H = photo.shape()[0], W = photo.shape()[1];
  ASSERT_GE(std::min(H, W), 224) << files.front();
  // Its grey version (one channel) too.
  Tensor grey = Tensor::empty({H, W, 1}, DType::kU8, Layout::kHWC);
  for (int64_t i = 0; i < H * W; ++i) grey.typed<uint8_t>()[i] = photo.typed<uint8_t>()[3 * i + 1];
  struct Window { int64_t top, left, h, w; };
  const Window windows[] = {{(H - 224) / 2, (W - 224) / 2, 224, 224},  // the training crop
                            {-17, W - 150, 224, 224},                  // across the top-right corner
                            {H - 100, -33, 160, 250},                  // across the bottom-left
                            {0, 0, H, W}};                             // the whole photo
  for (const Tensor* img : {&photo, &grey}) {
    for (const Window& win : windows) {
      for (DType out : kOutDtypes) {
        for (Layout layout : {Layout::kCHW, Layout::kHWC}) {
          for (bool mirror : {false, true}) {
            CmnCase c;
            c.out = out;
            c.o.layout = layout;
            c.o.mirror = mirror;
            c.o.top = win.top, c.o.left = win.left, c.h = win.h, c.w = win.w;
            c.o.fill = 114;
            c.o.norm = kImageNet;
            if (img == &grey) c.o.norm = NormalizeParams{{0.45f}, {0.226f}, 255.0f};
            const ConstTensorView src = img->view();
            const std::string diff = compare_paths(src, c);
            ASSERT_EQ(diff, "") << files.front() << ": " << describe(src, c);
          }
        }
      }
    }
  }
}

TEST(NormalizeTest, MatchesTorchvisionOnUint8AndFloat) {
  HDL_REQUIRE_REFERENCES();
  for (const RefEntry* c : references().cases("normalize")) {
    const ConstTensorView src = references().source(c->get("src"));
    Tensor out = Tensor::empty(c->shape(), DType::kF32);
    ASSERT_TRUE(normalize(src, out.view(), kImageNet, 2).is_ok());
    expect_exact(out.view(), *c);
    // The same through float input (ToTensor done by cast + divide), channel axis 0 (CHW).
    Tensor f = Tensor::empty(src.shape, DType::kF32);
    ASSERT_TRUE(cast(src, f.view()).is_ok());
    for (int64_t i = 0; i < f.num_elements(); ++i) f.typed<float>()[i] /= 255.0f;
    TensorView chw = f.view();
    chw.shape = {src.shape[2], src.shape[0], src.shape[1]};
    chw.strides = {1, src.shape[1] * src.shape[2], src.shape[2]};
    Tensor out2 = Tensor::empty(chw.shape, DType::kF32);
    NormalizeParams p = kImageNet;
    p.scale = 1.0f;
    ASSERT_TRUE(normalize(chw, out2.view(), p, 0).is_ok());
    TensorView as_hwc = out2.view();
    as_hwc.shape = c->shape();
    as_hwc.strides = {c->shape()[1], 1, c->shape()[0] * c->shape()[1]};
    expect_exact(as_hwc, *c);
  }
}

TEST(CastTest, MatchesTorchConversions) {
  HDL_REQUIRE_REFERENCES();
  const auto norm = references().cases("normalize");
  ASSERT_FALSE(norm.empty());
  for (const RefEntry* c : references().cases("cast")) {
    Tensor out = Tensor::empty(c->shape(), c->dtype());
    if (c->has("from_", "normalized")) {
      const RefEntry* src = nullptr;
      for (const RefEntry* n : norm) if (n->get("src") == c->get("src")) src = n;
      ASSERT_TRUE(src);
      ASSERT_TRUE(cast(src->view(), out.view()).is_ok());
    } else {
      // (x * 0.9f + 0.3f) in float32, then .to(uint8) truncates.
      const ConstTensorView s = references().source(c->get("src"));
      Tensor f = Tensor::empty(s.shape, DType::kF32);
      ASSERT_TRUE(cast(s, f.view()).is_ok());
      for (int64_t i = 0; i < f.num_elements(); ++i) f.typed<float>()[i] = f.typed<float>()[i] * 0.9f + 0.3f;
      ASSERT_TRUE(cast(f.view(), out.view()).is_ok());
    }
    expect_exact(out.view(), *c);
  }
  // Saturation and truncation toward zero.
  const float in[5] = {-3.7f, 2.9f, 255.9f, 300.0f, -0.5f};
  uint8_t u8[5];
  ASSERT_TRUE(cast(ConstTensorView(in, {5}, DType::kF32), TensorView(u8, {5}, DType::kU8)).is_ok());
  EXPECT_EQ(std::vector<int>(u8, u8 + 5), (std::vector<int>{0, 2, 255, 255, 0}));
  int16_t i16[5];
  ASSERT_TRUE(cast(ConstTensorView(in, {5}, DType::kF32), TensorView(i16, {5}, DType::kI16)).is_ok());
  EXPECT_EQ(std::vector<int>(i16, i16 + 5), (std::vector<int>{-3, 2, 255, 300, 0}));
}

}  // namespace
}  // namespace hdl::kernels
