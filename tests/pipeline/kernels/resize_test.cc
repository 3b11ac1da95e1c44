// resize kernels vs torchvision 0.14's tensor path (antialias=True and False) and Pillow (box,
// lanczos; and every filter with ResizeOptions::pillow), on real photos. Bounds (also in
// pipeline/kernels/README.md), on the 0..255 scale:
//   nearest: exact.  bilinear / bicubic, antialias or not, vs torch: max 1, mean <= 0.005.
//   box / lanczos vs Pillow (emulating its uint8 intermediate and half-up rounding; Pillow uses
//   22-bit fixed-point weights): max 1, mean <= 0.005.  float32 output vs torch float: max 2e-3.
//   pillow=true vs PIL.Image.resize (what torchvision does to PIL images), every filter, up and
//   down, RGB and gray, odd sizes: bit-exact (Pillow's integer arithmetic). The tensor path
//   (pillow=false) is printed beside it for the record: bicubic differs from Pillow by up to 9.
//   Output sizes of Resize(int[, max_size]): exactly torchvision's.
#include "pipeline/kernels/resize.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/pipeline/kernels/reference_data.h"

namespace hdl::kernels {
namespace {

using ::hdl::testing::DiffStats;
using ::hdl::testing::references;
using ::hdl::testing::RefEntry;

struct Bound {
  double max_abs, mean_abs;
};

Bound bound_for(const RefEntry& c) {
  if (c.has("filter", "nearest")) return {0, 0};
  if (c.has("ref", "pillow")) return {0, 0};
  if (c.has("ref", "pil")) return {1, 0.005};
  return {1, 0.005};
}

Tensor run_resize(const ConstTensorView& src, const RefEntry& c, ResizeWorkspace& ws,
                  DType dtype = DType::kU8, bool pillow = true) {
  ResizeOptions opt;
  opt.filter = parse_resize_filter(c.get("filter").c_str());
  opt.antialias = c.i("antialias") != 0;
  opt.pillow = pillow && c.has("pillow", "1");
  Tensor out = Tensor::empty(c.shape(), dtype, Layout::kHWC);
  Status st = resize(src, out.view(), opt, ws);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return out;
}

TEST(ResizeTest, MatchesTorchvisionAndPillow) {
  HDL_REQUIRE_REFERENCES();
  ResizeWorkspace ws;  // reused across all sizes on purpose
  std::map<std::string, DiffStats> worst;
  const auto cases = references().cases("resize");
  ASSERT_GT(cases.size(), 100u);
  for (const RefEntry* c : cases) {
    const Tensor out = run_resize(references().source(c->get("src")), *c, ws);
    const DiffStats d = ::hdl::testing::diff(out.view(), c->view());
    const Bound b = bound_for(*c);
    EXPECT_LE(d.max_abs, b.max_abs) << describe(*c) << ": " << d;
    EXPECT_LE(d.mean_abs, b.mean_abs) << describe(*c) << ": " << d;
    const std::string ref = c->has("ref", "pillow") ? " pillow=true vs PIL.Image.resize"
                            : c->has("ref", "pil")  ? " vs PIL"
                                                    : " vs torch";
    DiffStats& w = worst[c->get("filter") + (c->i("antialias") ? " aa" : " no-aa") + ref];
    w.max_abs = std::max(w.max_abs, d.max_abs);
    w.mean_abs = std::max(w.mean_abs, d.mean_abs);
    if (c->has("ref", "pillow")) {  // the tensor path against Pillow, for the record
      const Tensor tensor_path = run_resize(references().source(c->get("src")), *c, ws, DType::kU8, false);
      const DiffStats t = ::hdl::testing::diff(tensor_path.view(), c->view());
      DiffStats& wt = worst[c->get("filter") + " aa pillow=false vs PIL.Image.resize (not a bound)"];
      wt.max_abs = std::max(wt.max_abs, t.max_abs);
      wt.mean_abs = std::max(wt.mean_abs, t.mean_abs);
    }
  }
  for (const auto& [k, d] : worst) {
    std::cout << "[ resize ] " << k << ": worst max_abs=" << d.max_abs
              << " worst mean_abs=" << d.mean_abs << "\n";
  }
}

TEST(ResizeTest, Float32OutputMatchesTorchFloat) {
  HDL_REQUIRE_REFERENCES();
  ResizeWorkspace ws;
  for (const RefEntry* c : references().cases("resize_f32")) {
    const Tensor out = run_resize(references().source(c->get("src")), *c, ws, DType::kF32);
    const DiffStats d = ::hdl::testing::diff(out.view(), c->view());
    EXPECT_LE(d.max_abs, 2e-3) << describe(*c) << ": " << d;
  }
}

TEST(ResizeTest, WindowOfStridedInputMatchesResizedCrop) {
  HDL_REQUIRE_REFERENCES();
  ResizeWorkspace ws;
  for (const RefEntry* c : references().cases("resized_crop")) {
    const ConstTensorView win = references().source(c->get("src")).crop_hw(
        c->i("top"), c->i("left"), c->i("crop_h"), c->i("crop_w"));
    ResizeOptions opt;
    Tensor out = Tensor::empty(c->shape(), DType::kU8, Layout::kHWC);
    ASSERT_TRUE(resize(win, out.view(), opt, ws).is_ok());
    const DiffStats d = ::hdl::testing::diff(out.view(), c->view());
    EXPECT_LE(d.max_abs, 1) << d;
    EXPECT_LE(d.mean_abs, 0.01) << d;
  }
}

// Non-dense input (RGB inside RGBA pixels) and output (a slot in a wider buffer) agree with the
// dense fast paths for every filter (within 1: the 3-channel fast path sums taps in two chains).
TEST(ResizeTest, StridedViewsMatchDenseViews) {
  HDL_REQUIRE_REFERENCES();
  const ConstTensorView src = references().source("odd");
  const int64_t h = src.shape[0], w = src.shape[1];
  std::vector<uint8_t> rgba(static_cast<size_t>(h * w * 4), 0);
  TensorView rgba_view(rgba.data(), {h, w, 4}, DType::kU8);
  TensorView rgb = rgba_view;
  rgb.shape[2] = 3;
  copy(src, rgb);
  ResizeWorkspace ws;
  for (auto f : {ResizeFilter::kNearest, ResizeFilter::kLinear, ResizeFilter::kCubic,
                 ResizeFilter::kBox, ResizeFilter::kLanczos}) {
    const ResizeOptions opt{f, true};
    Tensor dense = Tensor::empty({61, 250, 3}, DType::kU8);
    ASSERT_TRUE(resize(src, dense.view(), opt, ws).is_ok());
    Tensor wide = Tensor::empty({70, 300, 3}, DType::kU8);
    TensorView slot = wide.view().crop_hw(5, 7, 61, 250);
    slot.strides[2] = 1;
    ASSERT_TRUE(resize(rgb, slot, opt, ws).is_ok());
    EXPECT_LE(::hdl::testing::diff(slot, dense.view()).max_abs, 1) << static_cast<int>(f);
  }
}

// ResizeOptions::pillow's vector paths (dense RGB rows: AVX2 two pixels at a time, or four lanes
// per pixel; the vertical pass sixteen or four columns at a time) against its scalar loops,
// which strided views take: the same integer sums, so the same bytes. Sizes where the row's last
// pixels leave the vector loop, odd widths, up and down, every filter, and a strided output.
// CTest runs this again with HDL_DISABLE_AVX2=1 for the baseline vector paths.
TEST(ResizeTest, PillowVectorPathsEqualScalarOnes) {
  std::mt19937 rng(7);
  const int64_t sizes[][4] = {{37, 53, 17, 224}, {280, 300, 224, 224}, {9, 5, 23, 31},  {100, 120, 224, 224},
                              {64, 64, 64, 33},  {421, 638, 256, 387}, {3, 250, 3, 7}, {31, 2, 11, 3}};
  ResizeWorkspace ws;
  for (const auto& s : sizes) {
    const int64_t h = s[0], w = s[1], oh = s[2], ow = s[3];
    std::vector<uint8_t> rgba(static_cast<size_t>(h * w * 4));
    for (auto& v : rgba) v = static_cast<uint8_t>(rng());
    TensorView padded(rgba.data(), {h, w, 4}, DType::kU8);
    padded.shape[2] = 3;  // strided: each pixel's fourth byte skipped
    Tensor dense_src = Tensor::empty({h, w, 3}, DType::kU8);
    copy(padded, dense_src.view());
    for (auto f : {ResizeFilter::kNearest, ResizeFilter::kLinear, ResizeFilter::kCubic, ResizeFilter::kBox,
                   ResizeFilter::kLanczos}) {
      ResizeOptions opt{f, true};
      opt.pillow = true;
      Tensor vec = Tensor::empty({oh, ow, 3}, DType::kU8), scalar = Tensor::empty({oh, ow, 3}, DType::kU8);
      ASSERT_TRUE(resize(dense_src.view(), vec.view(), opt, ws).is_ok());
      ASSERT_TRUE(resize(padded, scalar.view(), opt, ws).is_ok());
      const std::string what = std::to_string(h) + "x" + std::to_string(w) + " -> " + std::to_string(oh) + "x" +
                               std::to_string(ow) + " filter " + std::to_string(static_cast<int>(f));
      EXPECT_EQ(::hdl::testing::diff(vec.view(), scalar.view()).max_abs, 0) << what;
      Tensor wide = Tensor::empty({oh, ow, 4}, DType::kU8);
      TensorView slot = wide.view();
      slot.shape[2] = 3;
      ASSERT_TRUE(resize(dense_src.view(), slot, opt, ws).is_ok());
      EXPECT_EQ(::hdl::testing::diff(slot, scalar.view()).max_abs, 0) << what << " (strided output)";
      if (oh == h) continue;
      // One axis only: the horizontal pass alone (same height), and the vertical pass alone.
      Tensor hv = Tensor::empty({h, ow, 3}, DType::kU8), hs = Tensor::empty({h, ow, 3}, DType::kU8);
      ASSERT_TRUE(resize(dense_src.view(), hv.view(), opt, ws).is_ok());
      ASSERT_TRUE(resize(padded, hs.view(), opt, ws).is_ok());
      EXPECT_EQ(::hdl::testing::diff(hv.view(), hs.view()).max_abs, 0) << what << " (horizontal only)";
      Tensor vv = Tensor::empty({oh, w, 3}, DType::kU8), vs = Tensor::empty({oh, w, 3}, DType::kU8);
      ASSERT_TRUE(resize(dense_src.view(), vv.view(), opt, ws).is_ok());
      ASSERT_TRUE(resize(padded, vs.view(), opt, ws).is_ok());
      EXPECT_EQ(::hdl::testing::diff(vv.view(), vs.view()).max_abs, 0) << what << " (vertical only)";
    }
  }
}

TEST(ResizeTest, OutputSizesMatchTorchvision) {
  HDL_REQUIRE_REFERENCES();
  int n = 0;
  for (const auto& e : references().entries) {
    if (e.kind != "size") continue;
    const int64_t size[1] = {e.i("size")};
    const std::optional<int64_t> max_size =
        e.i("max_size") > 0 ? std::optional<int64_t>(e.i("max_size")) : std::nullopt;
    const SizeHW got = resize_output_size({e.i("in_h"), e.i("in_w")}, size, max_size);
    EXPECT_EQ(got, (SizeHW{e.i("h"), e.i("w")})) << describe(e);
    ++n;
  }
  EXPECT_GT(n, 100);
  const int64_t hw[2] = {100, 37};
  EXPECT_EQ(resize_output_size({375, 500}, hw), (SizeHW{100, 37}));
}

TEST(ResizeTest, BadArgumentsAreReported) {
  const int64_t one[1] = {224}, two[2] = {224, 224}, three[3] = {1, 2, 3};
  EXPECT_THROW(resize_output_size({375, 500}, one, 224), std::invalid_argument);
  EXPECT_THROW(resize_output_size({375, 500}, two, 300), std::invalid_argument);
  EXPECT_THROW(resize_output_size({375, 500}, three), std::invalid_argument);
  EXPECT_THROW(parse_resize_filter("area"), std::invalid_argument);
  uint8_t px[12] = {};
  ResizeWorkspace ws;
  const ConstTensorView src(px, {2, 2, 3}, DType::kU8);
  TensorView bad(px, {2, 2, 1}, DType::kU8);
  EXPECT_EQ(resize(src, bad, {}, ws).code(), StatusCode::kInvalidArgument);
  TensorView bad_type(px, {1, 1, 3}, DType::kI32);
  EXPECT_EQ(resize(src, bad_type, {}, ws).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hdl::kernels
