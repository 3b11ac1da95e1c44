// erase / erase_patch vs torchvision F.erase on the normalised float32 image of real photos:
// exact, in CHW and (through strides) HWC; empty rectangles change nothing; bad rectangles,
// values and views are refused.
#include "pipeline/kernels/erase.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "pipeline/kernels/normalize.h"
#include "tests/pipeline/kernels/reference_data.h"

namespace hdl::kernels {
namespace {

using ::hdl::testing::references;
using ::hdl::testing::RefEntry;

// The case's source normalised as torchvision's F.normalize(x / 255, ImageNet mean, std), into
// `out` ([C, H, W] contiguous) seen through `view` in the asked layout.
TensorView normalised(const RefEntry& c, Tensor& out, int channel_axis) {
  const ConstTensorView src = references().source(c.get("src"));
  const int64_t H = src.shape[0], W = src.shape[1], C = src.shape[2];
  out = channel_axis == 0 ? Tensor::empty({C, H, W}, DType::kF32) : Tensor::empty({H, W, C}, DType::kF32);
  TensorView hwc = out.view();  // the same memory seen as HWC, for the normalize kernel
  if (channel_axis == 0) {
    hwc.shape = {H, W, C};
    hwc.strides = {W, 1, H * W};
  }
  const NormalizeParams p{{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}, 255.0f};
  EXPECT_TRUE(normalize(src, hwc, p, 2).is_ok());
  return channel_axis == 0 ? out.view() : hwc;
}

Status erase_case(const RefEntry& c, const TensorView& img, int axis) {
  const EraseRect r{c.i("top"), c.i("left"), c.i("h"), c.i("w")};
  if (c.has("kind", "channels")) return erase(img, r, std::vector<float>{1.5f, -2.0f, 3.25f}, axis);
  if (c.has("kind", "one")) return erase(img, r, std::vector<float>{-0.75f}, axis);
  std::vector<float> patch(static_cast<size_t>(3 * r.height * r.width));
  for (size_t k = 0; k < patch.size(); ++k) patch[k] = static_cast<float>(k) / 7.0f;
  return erase_patch(img, r, patch, axis);
}

TEST(EraseTest, MatchesTorchvisionEraseInBothLayouts) {
  HDL_REQUIRE_REFERENCES();
  int n = 0;
  for (const RefEntry* c : references().cases("erase")) {
    for (int axis : {0, 2}) {
      Tensor buf;
      const TensorView img = normalised(*c, buf, axis);
      const Status st = erase_case(*c, img, axis);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      TensorView chw = img;  // compared as CHW
      if (axis == 2) {
        chw.shape = {img.shape[2], img.shape[0], img.shape[1]};
        chw.strides = {img.strides[2], img.strides[0], img.strides[1]};
      }
      const auto d = ::hdl::testing::diff(chw, c->view());
      EXPECT_EQ(d.max_abs, 0) << describe(*c) << " axis " << axis << ": " << d;
    }
    ++n;
  }
  EXPECT_EQ(n, 8);
}

TEST(EraseTest, RefusesBadRectanglesValuesAndViews) {
  std::vector<float> px(3 * 4 * 5, 1.0f);
  TensorView img(px.data(), {3, 4, 5}, DType::kF32);
  const std::vector<float> one{0.0f}, two{0.0f, 1.0f};
  EXPECT_TRUE(erase(img, {0, 0, 4, 5}, one).is_ok());
  EXPECT_FALSE(erase(img, {1, 0, 4, 5}, one).is_ok());   // leaves the image
  EXPECT_FALSE(erase(img, {0, -1, 1, 1}, one).is_ok());
  EXPECT_FALSE(erase(img, {0, 0, 1, 1}, two).is_ok());   // 2 values for 3 channels
  EXPECT_FALSE(erase_patch(img, {0, 0, 2, 2}, std::vector<float>(11)).is_ok());
  std::vector<uint8_t> u8(60);
  EXPECT_FALSE(erase(TensorView(u8.data(), {3, 4, 5}, DType::kU8), {0, 0, 1, 1}, one).is_ok());
  std::fill(px.begin(), px.end(), 1.0f);
  ASSERT_TRUE(erase(img, {2, 3, 0, 2}, one).is_ok());  // empty: nothing changes
  EXPECT_EQ(std::count(px.begin(), px.end(), 1.0f), 60);
  ASSERT_TRUE(erase(img, {1, 1, 2, 3}, std::vector<float>{5, 6, 7}).is_ok());
  EXPECT_EQ(std::count(px.begin(), px.end(), 6.0f), 6);  // channel 1's 2x3 rectangle
  EXPECT_EQ(px[1 * 20 + 1 * 5 + 1], 6.0f);
  EXPECT_EQ(px[1 * 20 + 0 * 5 + 1], 1.0f);
}

}  // namespace
}  // namespace hdl::kernels
