// crop_mirror_normalize / normalize / cast vs torchvision F.crop + F.hflip + ToTensor +
// F.normalize (+ .half() / .bfloat16()) on real photos: exact (float32 bit-exact, i.e. well
// within the required 1e-6 relative).
#include "pipeline/kernels/normalize.h"

#include <gtest/gtest.h>

#include "tests/pipeline/kernels/reference_data.h"

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
