// gaussian_blur vs torchvision F.gaussian_blur on uint8 tensors (real photos, 1 and 3 channels).
// Bound: max 1 grey level, mean <= 0.01 (torchvision convolves with the 2-D kernel in one sum;
// this kernel runs two 1-D passes: same weights, different float rounding).
#include "pipeline/kernels/blur.h"

#include <gtest/gtest.h>

#include <iostream>

#include "tests/pipeline/kernels/reference_data.h"

namespace hdl::kernels {
namespace {

using ::hdl::testing::references;
using ::hdl::testing::RefEntry;

TEST(GaussianBlurTest, MatchesTorchvision) {
  HDL_REQUIRE_REFERENCES();
  BlurWorkspace ws;
  double worst_max = 0, worst_mean = 0;
  const auto cases = references().cases("blur");
  ASSERT_GE(cases.size(), 12u);
  for (const RefEntry* c : cases) {
    GaussianBlurOptions o{static_cast<int>(c->i("kx")), static_cast<int>(c->i("ky")), c->f("sx"), c->f("sy")};
    Tensor out = Tensor::empty(c->shape(), DType::kU8);
    const Status st = gaussian_blur(references().source(c->get("src")), out.view(), o, ws);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    const auto d = ::hdl::testing::diff(out.view(), c->view());
    EXPECT_LE(d.max_abs, 1) << describe(*c) << ": " << d;
    EXPECT_LE(d.mean_abs, 0.01) << describe(*c) << ": " << d;
    worst_max = std::max(worst_max, d.max_abs);
    worst_mean = std::max(worst_mean, d.mean_abs);
  }
  std::cout << "[ blur ] worst max_abs=" << worst_max << " worst mean_abs=" << worst_mean << "\n";
}

TEST(GaussianBlurTest, KernelMatchesTorchvisionFormula) {
  std::vector<float> k;
  gaussian_kernel_1d(5, 1.5, k);
  ASSERT_EQ(k.size(), 5u);
  // torchvision _get_gaussian_kernel1d(5, 1.5), printed by torch 1.13.
  const float want[5] = {0.1200783700f, 0.2338807434f, 0.2920817137f, 0.2338807434f, 0.1200783700f};
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(k[i], want[i], 1e-7f) << i;
}

TEST(GaussianBlurTest, BadArgumentsAreReported) {
  uint8_t px[12] = {};
  BlurWorkspace ws;
  const ConstTensorView src(px, {2, 2, 3}, DType::kU8);
  uint8_t out[12];
  const TensorView dst(out, {2, 2, 3}, DType::kU8);
  EXPECT_EQ(gaussian_blur(src, dst, {4, 3, 1, 1}, ws).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(gaussian_blur(src, dst, {3, 3, 0, 1}, ws).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hdl::kernels
