// Warp and auto-augment kernels vs Pillow 9.4 on real photos (make_augment_references.py):
// Image.transform(AFFINE) through each of Pillow's nearest engines (per-axis table, 16.16 fixed
// point, double steps) and bilinear, Image.rotate (transposes and matrices). Bound: bit-exact.
// The ImageOps / ImageEnhance kernels are checked through torchvision's _apply_op in
// tests/pipeline/operators/auto_augment_policy_test.cc; here: in-place use and errors.
#include "pipeline/kernels/augment.h"

#include <gtest/gtest.h>

#include <iostream>
#include <sstream>
#include <vector>

#include "pipeline/kernels/color.h"
#include "pipeline/kernels/warp.h"
#include "tests/pipeline/kernels/reference_data.h"

namespace hdl::kernels {
namespace {

using ::hdl::testing::DiffStats;
using ::hdl::testing::RefEntry;
using ::hdl::testing::References;

const References& refs() { return ::hdl::testing::references_from("make_augment_references.py", "augment_references"); }

#define REQUIRE_AUGMENT_REFERENCES()                                                  \
  do {                                                                                \
    if (!refs().error.empty()) GTEST_SKIP() << "augment references unavailable: " << refs().error; \
  } while (0)

std::vector<double> numbers(const std::string& text) {
  std::vector<double> out;
  std::stringstream ss(text);
  for (std::string tok; std::getline(ss, tok, ',');) out.push_back(std::stod(tok));
  return out;
}

std::vector<uint8_t> fill_of(const RefEntry& c) {
  std::vector<uint8_t> fill;
  if (c.get("fill") != "none") {
    for (double v : numbers(c.get("fill"))) fill.push_back(static_cast<uint8_t>(v));
  }
  return fill;
}

WarpFilter filter_of(const RefEntry& c) {
  return c.has("interp", "bilinear") ? WarpFilter::kBilinear : c.has("interp", "bicubic") ? WarpFilter::kBicubic : WarpFilter::kNearest;
}

// Runs `op` on every case of `name`; every output must equal Pillow's.
template <typename Op>
void check_exact(const std::string& name, Op&& op) {
  REQUIRE_AUGMENT_REFERENCES();
  const auto cases = refs().cases(name);
  ASSERT_FALSE(cases.empty()) << name;
  for (const RefEntry* c : cases) {
    Tensor out = Tensor::empty(c->shape(), DType::kU8, Layout::kHWC);
    const Status st = op(refs().source(c->get("src")), out.view(), *c);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    const DiffStats d = ::hdl::testing::diff(out.view(), c->view());
    EXPECT_EQ(d.max_abs, 0) << describe(*c) << ": " << d;
  }
  std::cout << "[ augment ] " << name << ": " << cases.size() << " cases compared\n";
}

TEST(WarpTest, AffineTransformEqualsPillow) {
  check_exact("transform", [](const ConstTensorView& s, const TensorView& d, const RefEntry& c) {
    const std::vector<double> k = numbers(c.get("coeffs"));
    return affine_transform(s, d, {k[0], k[1], k[2], k[3], k[4], k[5]}, filter_of(c), fill_of(c));
  });
}

TEST(WarpTest, RotateEqualsPillow) {
  check_exact("rotate", [](const ConstTensorView& s, const TensorView& d, const RefEntry& c) {
    return rotate(s, d, c.f("angle"), filter_of(c), fill_of(c));
  });
}

TEST(WarpTest, FillAndErrors) {
  uint8_t px[2 * 2 * 3] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, out[12];
  const ConstTensorView src(px, {2, 2, 3}, DType::kU8);
  const TensorView dst(out, {2, 2, 3}, DType::kU8);
  const uint8_t fill[3] = {7, 8, 9};
  // Everything maps outside: every pixel is the fill colour.
  ASSERT_TRUE(affine_transform(src, dst, {1, 0, 100, 0, 1, 0}, WarpFilter::kNearest, fill).is_ok());
  for (int i = 0; i < 12; ++i) EXPECT_EQ(out[i], fill[i % 3]) << i;
  const uint8_t two[2] = {1, 2};
  EXPECT_FALSE(affine_transform(src, dst, {1, 0, 0, 0, 1, 0}, WarpFilter::kNearest, two).is_ok());
  EXPECT_FALSE(rotate(src, TensorView(out, {1, 4, 3}, DType::kU8), 10.0, WarpFilter::kNearest).is_ok());
}

TEST(AugmentKernelsTest, PointwiseKernelsWorkInPlace) {
  uint8_t px[6] = {0, 100, 200, 50, 150, 250};
  const TensorView v(px, {1, 2, 3}, DType::kU8);
  ASSERT_TRUE(invert(v, v).is_ok());
  EXPECT_EQ(std::vector<uint8_t>(px, px + 6), (std::vector<uint8_t>{255, 155, 55, 205, 105, 5}));
  ASSERT_TRUE(posterize(v, v, 2).is_ok());
  EXPECT_EQ(std::vector<uint8_t>(px, px + 6), (std::vector<uint8_t>{192, 128, 0, 192, 64, 0}));
  ASSERT_TRUE(solarize(v, v, 128.0).is_ok());
  EXPECT_EQ(std::vector<uint8_t>(px, px + 6), (std::vector<uint8_t>{63, 127, 0, 63, 64, 0}));
  ASSERT_TRUE(enhance_brightness(v, v, 2.0).is_ok());
  EXPECT_EQ(std::vector<uint8_t>(px, px + 6), (std::vector<uint8_t>{126, 254, 0, 126, 128, 0}));
}

TEST(AugmentKernelsTest, Errors) {
  uint8_t px[8] = {};
  const TensorView four(px, {1, 2, 4}, DType::kU8), three(px, {1, 2, 3}, DType::kU8);
  EXPECT_FALSE(equalize(four, four).is_ok());
  EXPECT_FALSE(posterize(three, three, 9).is_ok());
  EXPECT_FALSE(posterize(three, three, -1).is_ok());
  float f[6] = {};
  EXPECT_FALSE(autocontrast(ConstTensorView(f, {1, 2, 3}, DType::kF32), three).is_ok());
}

}  // namespace
}  // namespace hdl::kernels
