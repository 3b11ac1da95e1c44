// crop / pad / flip / transpose vs torchvision F.crop, F.pad, F.hflip, F.vflip and
// Tensor.permute on real photos: all exact.
#include "pipeline/kernels/crop.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/pipeline/kernels/reference_data.h"

namespace hdl::kernels {
namespace {

using ::hdl::testing::references;
using ::hdl::testing::RefEntry;

void expect_exact(const ConstTensorView& got, const RefEntry& c) {
  const auto d = ::hdl::testing::diff(got, c.view());
  EXPECT_EQ(d.max_abs, 0) << describe(c) << ": " << d;
}

TEST(CropTest, MatchesTorchvisionCropIncludingOutsideWindows) {
  HDL_REQUIRE_REFERENCES();
  for (const RefEntry* c : references().cases("crop")) {
    Tensor out = Tensor::empty(c->shape(), DType::kU8);
    ASSERT_TRUE(crop(references().source(c->get("src")), c->i("top"), c->i("left"), out.view()).is_ok());
    expect_exact(out.view(), *c);
  }
}

TEST(PadTest, MatchesTorchvisionPadAllModes) {
  HDL_REQUIRE_REFERENCES();
  int n = 0;
  for (const RefEntry* c : references().cases("pad")) {
    const Padding p{c->i("left"), c->i("top"), c->i("right"), c->i("bottom")};
    const double fill[1] = {c->f("fill")};
    Tensor out = Tensor::empty(c->shape(), DType::kU8);
    const Status st = pad(references().source(c->get("src")), p,
                          parse_pad_mode(c->get("mode").c_str()), out.view(), fill);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    expect_exact(out.view(), *c);
    ++n;
  }
  EXPECT_GE(n, 12);
}

TEST(PadTest, NegativePaddingCropsAndFoldsAboutTheCroppedEdges) {
  // [0 1 2 3 4], left -2 (crop to [2 3 4]), right +3 symmetric: [2 3 4 | 4 3 2].
  const uint8_t row[5] = {0, 1, 2, 3, 4};
  uint8_t out[6];
  ASSERT_TRUE(pad(ConstTensorView(row, {1, 5, 1}, DType::kU8), {-2, 0, 3, 0}, PadMode::kSymmetric,
                  TensorView(out, {1, 6, 1}, DType::kU8)).is_ok());
  EXPECT_EQ(std::vector<uint8_t>(out, out + 6), (std::vector<uint8_t>{2, 3, 4, 4, 3, 2}));
  // Reflect past the image folds again: [1 2 | 0 1 2 | 1 0 1 2].
  uint8_t out2[9];
  ASSERT_TRUE(pad(ConstTensorView(row, {1, 3, 1}, DType::kU8), {2, 0, 4, 0}, PadMode::kReflect,
                  TensorView(out2, {1, 9, 1}, DType::kU8)).is_ok());
  EXPECT_EQ(std::vector<uint8_t>(out2, out2 + 9), (std::vector<uint8_t>{2, 1, 0, 1, 2, 1, 0, 1, 2}));
  EXPECT_EQ(pad(ConstTensorView(row, {1, 5, 1}, DType::kU8), {1, 0, 0, 0}, PadMode::kEdge,
                TensorView(out, {1, 5, 1}, DType::kU8)).code(), StatusCode::kInvalidArgument);
}

TEST(FlipTest, MatchesTorchvisionFlips) {
  HDL_REQUIRE_REFERENCES();
  for (const RefEntry* c : references().cases("flip")) {
    Tensor out = Tensor::empty(c->shape(), DType::kU8);
    ASSERT_TRUE(flip(references().source(c->get("src")), out.view(), c->i("horizontal") != 0,
                     c->i("vertical") != 0).is_ok());
    expect_exact(out.view(), *c);
  }
}

TEST(TransposeTest, HwcToChwAndBackAnyDtype) {
  HDL_REQUIRE_REFERENCES();
  for (const RefEntry* c : references().cases("hwc_to_chw")) {
    const ConstTensorView src = references().source(c->get("src"));
    Tensor chw = Tensor::empty(c->shape(), DType::kU8, Layout::kCHW);
    ASSERT_TRUE(hwc_to_chw(src, chw.view()).is_ok());
    expect_exact(chw.view(), *c);
    Tensor back = Tensor::empty(src.shape, DType::kU8, Layout::kHWC);
    ASSERT_TRUE(chw_to_hwc(chw.view(), back.view()).is_ok());
    EXPECT_EQ(::hdl::testing::diff(back.view(), src).max_abs, 0);
  }
  // float32 (4-byte elements) through a strided source window.
  std::vector<float> img(5 * 7 * 3);
  for (size_t i = 0; i < img.size(); ++i) img[i] = static_cast<float>(i) * 0.5f;
  const ConstTensorView win = ConstTensorView(img.data(), {5, 7, 3}, DType::kF32).crop_hw(1, 2, 3, 4);
  std::vector<float> out(3 * 3 * 4);
  ASSERT_TRUE(hwc_to_chw(win, TensorView(out.data(), {3, 3, 4}, DType::kF32)).is_ok());
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 3; ++y)
      for (int x = 0; x < 4; ++x) EXPECT_EQ(out[(c * 3 + y) * 4 + x], img[((y + 1) * 7 + x + 2) * 3 + c]);
}

TEST(CropTest, FillPerChannelAndDtype) {
  const float px[2 * 2 * 3] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  float out[2 * 3 * 3];
  const double fill[3] = {-1, -2, -3};
  ASSERT_TRUE(crop(ConstTensorView(px, {2, 2, 3}, DType::kF32), 1, 0, TensorView(out, {2, 3, 3}, DType::kF32),
                   fill).is_ok());
  const float want[18] = {7, 8, 9, 10, 11, 12, -1, -2, -3, -1, -2, -3, -1, -2, -3, -1, -2, -3};
  for (int i = 0; i < 18; ++i) EXPECT_EQ(out[i], want[i]) << i;
  const double two[2] = {0, 1};
  EXPECT_EQ(crop(ConstTensorView(px, {2, 2, 3}, DType::kF32), 0, 0, TensorView(out, {2, 3, 3}, DType::kF32), two)
                .code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hdl::kernels
