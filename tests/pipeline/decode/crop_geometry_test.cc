// Crop geometry vs torchvision 0.14 itself (torchvision_geometry.py, run with /usr/bin/python3):
// RandomResizedCrop.get_params fed the very draws torchvision made (recorded by wrapping
// uniform_ and randint) returns the same window, including the central-crop fallback on extreme
// aspect ratios; CenterCrop offsets (with padding) for odd sizes.
#include "pipeline/decode/crop_geometry.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "tests/pipeline/decode/recorded_draws.h"
#include "tests/test_util.h"

namespace hdl {
namespace {

using testing::RecordedDraws;

const std::vector<std::string>& reference() { return testing::torchvision_geometry(); }

#define REQUIRE_REFERENCE() \
  if (reference().empty()) GTEST_SKIP() << "torchvision (/usr/bin/python3) unavailable"

TEST(CropGeometry, RandomResizedCropWindowsEqualTorchvisionGivenItsDraws) {
  REQUIRE_REFERENCE();
  int cases = 0, fallbacks = 0;
  for (size_t i = 0; i < reference().size(); ++i) {
    std::istringstream head(reference()[i]);
    std::string tag;
    head >> tag;
    if (tag != "RRC") continue;
    SizeHW image;
    int seed;
    RandomResizedCropParams p;
    head >> image.h >> image.w >> seed >> p.scale_lo >> p.scale_hi >> p.ratio_lo >> p.ratio_hi;
    RecordedDraws draws;
    bool any_randint = false;
    CropWindow want;
    for (++i; i < reference().size(); ++i) {
      std::istringstream line(reference()[i]);
      line >> tag;
      if (tag == "WIN") {
        line >> want.top >> want.left >> want.height >> want.width;
        break;
      }
      double v;
      line >> v;
      draws.add(tag[0], v);
      any_randint |= tag == "I";
    }
    const CropWindow got = random_resized_crop_window(image, p, draws);
    EXPECT_EQ(got, want) << reference()[i] << " for " << image.h << "x" << image.w << " seed " << seed;
    EXPECT_TRUE(draws.all_used()) << image.h << "x" << image.w << " seed " << seed;
    ++cases;
    fallbacks += !any_randint;
  }
  EXPECT_GT(cases, 500);
  EXPECT_GT(fallbacks, 50);  // the extreme aspect ratios take the central-crop fallback
}

TEST(CropGeometry, CenterCropOffsetsEqualTorchvision) {
  REQUIRE_REFERENCE();
  int n = 0;
  for (const std::string& l : reference()) {
    std::istringstream line(l);
    std::string tag;
    SizeHW image, crop;
    int64_t top, left;
    if (!(line >> tag) || tag != "CC") continue;
    line >> image.h >> image.w >> crop.h >> crop.w >> top >> left;
    EXPECT_EQ(center_crop_window(image, crop), (CropWindow{top, left, crop.h, crop.w})) << l;
    ++n;
  }
  EXPECT_GT(n, 50);
}

TEST(CropGeometry, CropOffsetAtTheEndsAndOutside) {
  EXPECT_EQ(crop_offset(500, 224, 0.0), 0);
  EXPECT_EQ(crop_offset(500, 224, 1.0), 276);
  EXPECT_EQ(crop_offset(225, 224, 0.5), 0);   // round(0.5) = 0 (half to even)
  EXPECT_EQ(crop_offset(227, 224, 0.5), 2);   // round(1.5) = 2
  EXPECT_EQ(crop_offset(100, 105, 0.5), -2);  // padded: (105 - 100) // 2 on the left
  EXPECT_EQ(crop_offset(100, 105, 1.0), -5);
  EXPECT_EQ(round_half_even(2.5), 2);
  EXPECT_EQ(round_half_even(-0.5), 0);
}

// crop_offset_binned cuts [0, 1] into H - h + 1 equal bins, one per offset: a uniform pos
// gives each offset the same share (the pipeline's statistical test draws it:
// VideoReaderTest.ClipCropOffsetsAreUniformIntegers), and pos 1 is the last offset.
TEST(CropGeometry, BinnedCropOffsetsGiveEveryOffsetAnEqualBin) {
  for (int64_t room : {0, 1, 4, 276}) {
    std::vector<int64_t> count(static_cast<size_t>(room + 1));
    constexpr int kSteps = 100000;
    for (int i = 0; i < kSteps; ++i) {  // the midpoints of kSteps equal slices of [0, 1)
      const int64_t k = crop_offset_binned(224 + room, 224, (i + 0.5) / kSteps);
      ASSERT_GE(k, 0);
      ASSERT_LE(k, room);
      ++count[static_cast<size_t>(k)];
    }
    for (int64_t c : count) EXPECT_NEAR(double(c), double(kSteps) / double(room + 1), 1.0) << room;
    EXPECT_EQ(crop_offset_binned(224 + room, 224, 0.0), 0);
    EXPECT_EQ(crop_offset_binned(224 + room, 224, 1.0), room);
  }
  EXPECT_EQ(crop_offset_binned(5, 3, 0.34), 1);        // bins [0, 1/3), [1/3, 2/3), [2/3, 1]
  EXPECT_EQ(crop_offset_binned(5, 3, 0.66), 1);
  EXPECT_EQ(crop_offset_binned(5, 3, 0.67), 2);
  EXPECT_EQ(crop_offset_binned(100, 105, 0.0), 0);     // padded: the image lies inside the window
  EXPECT_EQ(crop_offset_binned(100, 105, 0.99), -5);
  EXPECT_EQ(crop_offset_binned(100, 105, 1.0), -5);
  EXPECT_EQ(crop_offset_binned(100, 105, 0.5), -3);    // floor(0.5 * 6)
}

}  // namespace
}  // namespace hdl
