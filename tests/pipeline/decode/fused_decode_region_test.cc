// The fused image_decoder's region: Resize output sizes for odd sizes vs torchvision 0.14 itself
// (torchvision_geometry.py, run with /usr/bin/python3), the region an eval decode reads, and its
// alignment to the DCT-scaled grid.
#include "pipeline/decode/fused_decode_region.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "tests/pipeline/decode/recorded_draws.h"
#include "tests/test_util.h"

namespace hdl {
namespace {

const std::vector<std::string>& reference() { return testing::torchvision_geometry(); }

#define REQUIRE_REFERENCE() \
  if (reference().empty()) GTEST_SKIP() << "torchvision (/usr/bin/python3) unavailable"

TEST(FusedDecodeRegion, ResizeSizesEqualTorchvision) {
  REQUIRE_REFERENCE();
  kernels::ResizeWorkspace ws;
  int n = 0;
  for (const std::string& l : reference()) {
    std::istringstream line(l);
    std::string tag;
    SizeHW image, want;
    int64_t size, max_size;
    if (!(line >> tag) || tag != "RS") continue;
    line >> image.h >> image.w >> size >> max_size >> want.h >> want.w;
    FusedDecodeArgs args;
    args.resize = {size};
    if (max_size > 0) args.max_size = max_size;
    auto region = fused_decode_region(image, {0, 0, image.h, image.w}, args, 1, ws);
    if (want.h < 0) {
      EXPECT_FALSE(region.is_ok()) << l;  // a side of 0: torch refuses too
    } else {
      ASSERT_TRUE(region.is_ok()) << l << ": " << region.status().to_string();
      EXPECT_EQ(region->out_size, want) << l;
      EXPECT_EQ(region->full_out, want) << l;
    }
    ++n;
  }
  EXPECT_GT(n, 50);
}

TEST(FusedDecodeRegion, EvalDecodesOnlyTheSpanAtFullResolution) {
  kernels::ResizeWorkspace ws;
  FusedDecodeArgs args;
  args.resize = {256};
  args.center_crop = SizeHW{224, 224};
  auto region = fused_decode_region({375, 500}, {0, 0, 375, 500}, args, 8, ws);
  ASSERT_TRUE(region.is_ok());
  EXPECT_EQ(region->denom, 1);  // 375 < 2 * 256: no DCT scaling
  EXPECT_EQ(region->full_out, (SizeHW{256, 341}));
  EXPECT_EQ(region->dst_origin, (PointYX{16, 58}));
  EXPECT_EQ(region->out_size, (SizeHW{224, 224}));
  EXPECT_LT(region->roi.w, 500);
  EXPECT_LT(region->roi.h, 375);
  EXPECT_EQ(region->decoded, (SizeHW{region->roi.h, region->roi.w}));
}

TEST(FusedDecodeRegion, DctScalingAlignsTheRegionToTheScaledGrid) {
  kernels::ResizeWorkspace ws;
  FusedDecodeArgs args;
  args.resize = {64, 64};
  const SizeHW image{1001, 1503};
  const CropWindow window{13, 29, 611, 907};
  auto region = fused_decode_region(image, window, args, 8, ws);
  ASSERT_TRUE(region.is_ok());
  EXPECT_EQ(region->denom, 4);  // 611 / 4 >= 128; 611 / 8 < 128
  EXPECT_EQ(region->roi.x % 4, 0);
  EXPECT_EQ(region->roi.y % 4, 0);
  EXPECT_EQ(region->decoded.w, (region->roi.w + 3) / 4);
  EXPECT_EQ(region->decoded.h, (region->roi.h + 3) / 4);
  EXPECT_NEAR(region->full_in.w, 907 / 4.0, 1.0);
  args.dct_scaling = false;
  region = fused_decode_region(image, window, args, 8, ws);
  ASSERT_TRUE(region.is_ok());
  EXPECT_EQ(region->denom, 1);
  EXPECT_EQ(region->roi, (Roi{29, 13, 907, 611}));
}

}  // namespace
}  // namespace hdl
