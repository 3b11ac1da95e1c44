#include "media/tensor.h"

#include <gtest/gtest.h>

#include <numeric>

#include "media/batch.h"

namespace hdl {
namespace {

TEST(Shape, BasicsAndText) {
  Shape s{2, 3, 4};
  EXPECT_EQ(s.ndim(), 3);
  EXPECT_EQ(s.num_elements(), 24);
  EXPECT_EQ(s.prepend(5), (Shape{5, 2, 3, 4}));
  EXPECT_EQ(s.drop_front(), (Shape{3, 4}));
  EXPECT_EQ((Shape{-1, 3}).to_string(), "[?, 3]");
  EXPECT_FALSE((Shape{-1, 3}).fully_known());
  EXPECT_EQ(Shape{}.num_elements(), 1);
  EXPECT_EQ(contiguous_strides(s), (Shape{12, 4, 1}));
}

TEST(Tensor, CropViewAndStridedCopy) {
  Tensor t = Tensor::empty({4, 5, 3}, DType::kU8, Layout::kHWC);
  std::iota(t.typed<uint8_t>(), t.typed<uint8_t>() + t.num_elements(), 0);
  ConstTensorView win = ConstTensorView(t.view()).crop_hw(1, 2, 2, 3);
  EXPECT_EQ(win.shape, (Shape{2, 3, 3}));
  EXPECT_FALSE(win.is_contiguous());
  Tensor dst = Tensor::empty({2, 3, 3}, DType::kU8, Layout::kHWC);
  copy(win, dst.view());
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 3; ++x)
      for (int c = 0; c < 3; ++c)
        EXPECT_EQ(dst.typed<uint8_t>()[(y * 3 + x) * 3 + c], ((1 + y) * 5 + 2 + x) * 3 + c);
}

TEST(Tensor, SelectDropsOneDimension) {
  // [C, T, H, W] = [2, 3, 4, 5] float: frame t of channel-first clips is select(1, t).
  Tensor t = Tensor::empty({2, 3, 4, 5}, DType::kF32, Layout::kCFHW);
  std::iota(t.typed<float>(), t.typed<float>() + t.num_elements(), 0.0f);
  const TensorView frame = t.view().select(1, 2, Layout::kCHW);
  EXPECT_EQ(frame.shape, (Shape{2, 4, 5}));
  EXPECT_EQ(frame.strides, (Shape{60, 5, 1}));
  EXPECT_EQ(frame.layout, Layout::kCHW);
  for (int c = 0; c < 2; ++c)
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 5; ++x)
        EXPECT_EQ(frame.typed<float>()[c * 60 + y * 5 + x], float(((c * 3 + 2) * 4 + y) * 5 + x));
  const ConstTensorView first = ConstTensorView(t.view()).select(0, 1, Layout::kNone);
  EXPECT_EQ(first.shape, (Shape{3, 4, 5}));
  EXPECT_EQ(first.typed<float>()[0], 60.0f);
}

TEST(Tensor, CopyHandlesNonUnitInnerStride) {
  std::vector<float> src = {0, 1, 2, 3, 4, 5};
  ConstTensorView v(src.data(), {2, 3}, DType::kF32);
  ConstTensorView t = v;  // a transposed view
  t.shape = {3, 2};
  t.strides = {1, 3};
  std::vector<float> out(6);
  copy(t, TensorView(out.data(), {3, 2}, DType::kF32));
  EXPECT_EQ(out, (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(Batch, DenseSlicesShareStorage) {
  Tensor t = Tensor::empty({3, 2}, DType::kI64);
  for (int i = 0; i < 6; ++i) t.typed<int64_t>()[i] = i;
  Batch b = Batch::dense(t);
  EXPECT_TRUE(b.is_dense());
  EXPECT_EQ(b.size(), 3);
  EXPECT_EQ(b.sample_shape(1), (Shape{2}));
  EXPECT_EQ(b.sample(2).typed<int64_t>()[1], 5);
  EXPECT_EQ(b.sample(2).storage(), t.storage());
}

TEST(Batch, Ragged) {
  Batch b = Batch::ragged({Tensor::empty({2, 2, 3}, DType::kU8, Layout::kHWC),
                           Tensor::empty({5, 1, 3}, DType::kU8, Layout::kHWC)});
  EXPECT_FALSE(b.is_dense());
  EXPECT_EQ(b.size(), 2);
  EXPECT_EQ(b.sample_shape(1), (Shape{5, 1, 3}));
  EXPECT_EQ(b.layout(), Layout::kHWC);
}

}  // namespace
}  // namespace hdl
