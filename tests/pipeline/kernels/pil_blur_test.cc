// pil_gaussian_blur vs Pillow's ImageFilter.GaussianBlur (real photos, 1 and 3 channels): exact.
#include "pipeline/kernels/pil_blur.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "tests/pipeline/kernels/reference_data.h"

namespace hdl::kernels {
namespace {

using ::hdl::testing::references;
using ::hdl::testing::RefEntry;

TEST(PilGaussianBlurTest, MatchesPillowExactly) {
  HDL_REQUIRE_REFERENCES();
  PilBlurWorkspace ws;
  const auto cases = references().cases("pil_blur");
  ASSERT_GE(cases.size(), 15u);
  for (const RefEntry* c : cases) {
    Tensor out = Tensor::empty(c->shape(), DType::kU8);
    const Status st = pil_gaussian_blur(references().source(c->get("src")), out.view(),
                                        static_cast<float>(c->f("radius")), ws);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    const auto d = ::hdl::testing::diff(out.view(), c->view());
    EXPECT_EQ(d.max_abs, 0) << describe(*c) << ": " << d;
  }
}

TEST(PilGaussianBlurTest, InPlaceAndStridedLikeACopy) {
  // A 5x7 RGB image with a ramp, blurred out of place, in place, and from a channel-reversed view.
  std::vector<uint8_t> px(5 * 7 * 3);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<uint8_t>(i * 37 % 251);
  const ConstTensorView src(px.data(), {5, 7, 3}, DType::kU8);
  PilBlurWorkspace ws;
  std::vector<uint8_t> a(px.size()), b = px;
  ASSERT_TRUE(pil_gaussian_blur(src, TensorView(a.data(), {5, 7, 3}, DType::kU8), 1.3f, ws).is_ok());
  ASSERT_TRUE(pil_gaussian_blur(ConstTensorView(b.data(), {5, 7, 3}, DType::kU8),
                                TensorView(b.data(), {5, 7, 3}, DType::kU8), 1.3f, ws).is_ok());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, px);
  // Radius 0 copies; a constant image stays constant at any radius (edges are repeated).
  ASSERT_TRUE(pil_gaussian_blur(src, TensorView(b.data(), {5, 7, 3}, DType::kU8), 0.0f, ws).is_ok());
  EXPECT_EQ(b, px);
  std::vector<uint8_t> flat(px.size(), 77), out(px.size());
  ASSERT_TRUE(pil_gaussian_blur(ConstTensorView(flat.data(), {5, 7, 3}, DType::kU8),
                                TensorView(out.data(), {5, 7, 3}, DType::kU8), 9.0f, ws).is_ok());
  EXPECT_EQ(out, flat);
}

TEST(PilGaussianBlurTest, BadArgumentsAreReported) {
  uint8_t px[12] = {};
  PilBlurWorkspace ws;
  const ConstTensorView src(px, {2, 2, 3}, DType::kU8);
  uint8_t out[16];
  EXPECT_EQ(pil_gaussian_blur(src, TensorView(out, {2, 2, 3}, DType::kU8), -1.0f, ws).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(pil_gaussian_blur(src, TensorView(out, {2, 2, 4}, DType::kU8), 1.0f, ws).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(pil_gaussian_blur(src, TensorView(out, {2, 2, 1}, DType::kF32), 1.0f, ws).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hdl::kernels
