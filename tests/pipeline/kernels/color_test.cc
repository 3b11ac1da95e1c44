// Colour kernels vs torchvision 0.14 tensor ops on uint8 (and Pillow for YCbCr), real photos.
// Bounds (also in pipeline/kernels/README.md), in grey levels:
//   rgb_to_grayscale, swap_red_blue, brightness, saturation, solarize (also vs Pillow): exact.
//   contrast: max 1 (torch's float32 mean may differ from the exact one in the last bit).
//   hue: max 1, at most 0.1% of values differing (float32 HSV round trip, operation order).
//   YCbCr vs Pillow (its own fixed-point tables): max 1, mean <= 0.1 both ways.
#include "pipeline/kernels/color.h"

#include <gtest/gtest.h>

#include <functional>
#include <iostream>

#include "tests/pipeline/kernels/reference_data.h"

namespace hdl::kernels {
namespace {

using ::hdl::testing::DiffStats;
using ::hdl::testing::references;
using ::hdl::testing::RefEntry;

using Op = std::function<Status(const ConstTensorView&, const TensorView&, const RefEntry&)>;

// Runs `op` on every case of `name` and checks the bounds; prints the worst case seen.
void check_cases(const std::string& name, const Op& op, double max_abs, double max_mismatch_frac,
                 double max_mean = 1.0) {
  HDL_REQUIRE_REFERENCES();
  DiffStats worst;
  double worst_frac = 0;
  const auto cases = references().cases(name);
  ASSERT_FALSE(cases.empty()) << name;
  for (const RefEntry* c : cases) {
    Tensor out = Tensor::empty(c->shape(), DType::kU8, Layout::kHWC);
    const Status st = op(references().source(c->get("src")), out.view(), *c);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    const DiffStats d = ::hdl::testing::diff(out.view(), c->view());
    const double frac = static_cast<double>(d.mismatches) / static_cast<double>(d.count);
    EXPECT_LE(d.max_abs, max_abs) << describe(*c) << ": " << d;
    EXPECT_LE(frac, max_mismatch_frac) << describe(*c) << ": " << d;
    EXPECT_LE(d.mean_abs, max_mean) << describe(*c) << ": " << d;
    worst.max_abs = std::max(worst.max_abs, d.max_abs);
    worst.mean_abs = std::max(worst.mean_abs, d.mean_abs);
    worst_frac = std::max(worst_frac, frac);
  }
  std::cout << "[ color ] " << name << ": worst max_abs=" << worst.max_abs
            << " mean_abs=" << worst.mean_abs << " mismatching=" << worst_frac * 100 << "%\n";
}

TEST(ColorTest, GrayscaleExact) {
  check_cases("grayscale", [](auto& s, auto& d, auto&) { return rgb_to_grayscale(s, d); }, 0, 0);
}

TEST(ColorTest, SolarizeExactAgainstPillowAndTorchvision) {
  HDL_REQUIRE_REFERENCES();
  EXPECT_GE(references().cases("solarize").size(), 3u * 11);  // photo, odd, gray: Pillow, invert, torchvision
  check_cases("solarize", [](auto& s, auto& d, auto& c) { return solarize(s, d, c.f("threshold")); }, 0, 0);
  uint8_t px[4] = {0, 127, 128, 255};
  TensorView v(px, {1, 4, 1}, DType::kU8);
  ASSERT_TRUE(solarize(v, v, 128).is_ok());  // in place
  EXPECT_EQ(std::vector<int>(px, px + 4), (std::vector<int>{0, 127, 127, 0}));
  EXPECT_FALSE(solarize(v, v, std::nan("")).is_ok());
}

TEST(ColorTest, SwapRedBlueExactAndInPlace) {
  check_cases("rgb_to_bgr", [](auto& s, auto& d, auto&) { return swap_red_blue(s, d); }, 0, 0);
  uint8_t px[6] = {1, 2, 3, 4, 5, 6};
  TensorView v(px, {1, 2, 3}, DType::kU8);
  ASSERT_TRUE(swap_red_blue(v, v).is_ok());
  EXPECT_EQ(std::vector<uint8_t>(px, px + 6), (std::vector<uint8_t>{3, 2, 1, 6, 5, 4}));
}

TEST(ColorTest, YCbCrWithinBoundsOfPillow) {
  check_cases("rgb_to_ycbcr", [](auto& s, auto& d, auto&) { return rgb_to_ycbcr(s, d); }, 1, 0.1, 0.1);
  // The inverse starts from Pillow's YCbCr pixels (the reference of the forward case).
  HDL_REQUIRE_REFERENCES();
  const auto fwd = references().cases("rgb_to_ycbcr");
  const auto inv = references().cases("ycbcr_to_rgb");
  ASSERT_EQ(fwd.size(), inv.size());
  for (size_t i = 0; i < fwd.size(); ++i) {
    Tensor out = Tensor::empty(inv[i]->shape(), DType::kU8);
    ASSERT_TRUE(ycbcr_to_rgb(fwd[i]->view(), out.view()).is_ok());
    const DiffStats d = ::hdl::testing::diff(out.view(), inv[i]->view());
    EXPECT_LE(d.max_abs, 1) << describe(*inv[i]) << ": " << d;
    EXPECT_LE(d.mean_abs, 0.1) << d;
    std::cout << "[ color ] ycbcr_to_rgb: " << d << "\n";
  }
}

TEST(ColorTest, BrightnessExact) {
  check_cases("brightness", [](auto& s, auto& d, auto& c) { return adjust_brightness(s, d, c.f("factor")); }, 0, 0);
}

TEST(ColorTest, ContrastWithinOne) {
  check_cases("contrast", [](auto& s, auto& d, auto& c) { return adjust_contrast(s, d, c.f("factor")); }, 1, 0.001);
}

TEST(ColorTest, SaturationExact) {
  check_cases("saturation", [](auto& s, auto& d, auto& c) { return adjust_saturation(s, d, c.f("factor")); }, 0, 0);
}

TEST(ColorTest, HueWithinOne) {
  check_cases("hue", [](auto& s, auto& d, auto& c) { return adjust_hue(s, d, c.f("factor")); }, 1, 0.001);
}

TEST(ColorTest, BadArgumentsAreReported) {
  uint8_t px[12] = {};
  const ConstTensorView src(px, {2, 2, 3}, DType::kU8);
  TensorView dst(px, {2, 2, 3}, DType::kU8);
  EXPECT_EQ(adjust_brightness(src, dst, -1).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(adjust_hue(src, dst, 0.6).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(rgb_to_ycbcr(src, TensorView(px, {2, 2, 1}, DType::kU8)).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hdl::kernels
