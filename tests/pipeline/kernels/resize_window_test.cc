// resize_window / resize_source_span: a window of a resize computed from only the source pixels
// it needs is bit-identical to the same window of resize() on the full image, for every filter,
// with and without antialias, with Pillow's weights and rounding (pillow), uint8 and float32, windows at corners, edges and inside; the
// source may be a view into the full image or a dense copy of just the span (what a ROI decode
// gives). Real photos from the corpus.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "decoders/decoder_set.h"
#include "pipeline/kernels/normalize.h"
#include "pipeline/kernels/resize.h"
#include "tests/test_util.h"

namespace hdl::kernels {
namespace {

namespace fs = std::filesystem;

Tensor decode_photo(const fs::path& path) {
  const auto bytes = ::hdl::testing::read_file(path);
  DecoderSet decoders;
  auto shape = decoders.output_shape(bytes, DecodeRequest{});
  EXPECT_TRUE(shape.is_ok()) << path;
  if (!shape.is_ok()) return {};
  Tensor t = Tensor::empty(*shape, DType::kU8, Layout::kHWC);
  EXPECT_TRUE(decoders.decode(bytes, DecodeRequest{}, t.view()).is_ok()) << path;
  return t;
}

// Two photos of different shapes (landscape and portrait if the corpus has them).
std::vector<Tensor> photos() {
  std::vector<fs::path> files;
  for (const auto& d : fs::directory_iterator(::hdl::testing::corpus_dir() / "imagenet" / "train")) {
    for (const auto& f : fs::directory_iterator(d.path())) files.push_back(f.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<Tensor> out;
  bool landscape = false, portrait = false;
  for (const auto& f : files) {
    Tensor t = decode_photo(f);
    if (!t.defined() || t.shape()[0] > 700 || t.shape()[1] > 700) continue;
    const bool l = t.shape()[1] > t.shape()[0];
    if ((l && landscape) || (!l && portrait)) continue;
    (l ? landscape : portrait) = true;
    out.push_back(t);
    if (landscape && portrait) break;
  }
  return out;
}

Tensor as_float(const Tensor& u8) {
  Tensor f = Tensor::empty(u8.shape(), DType::kF32, Layout::kHWC);
  EXPECT_TRUE(cast(u8.view(), f.view()).is_ok());
  return f;
}

Tensor dense_copy(const ConstTensorView& v) {
  Tensor t = Tensor::empty(v.shape, v.dtype, Layout::kHWC);
  copy(v, t.view());
  return t;
}

struct Window {
  int64_t y, x, h, w;
};

// Corners, edges, inside, thin strips, one pixel and the whole image, of an out_h x out_w image.
std::vector<Window> windows_of(int64_t oh, int64_t ow) {
  std::vector<Window> ws = {{0, 0, oh, ow}, {0, 0, (oh + 1) / 2, (ow + 2) / 3},
                            {oh / 3, ow / 4, oh / 2, ow / 2}, {oh - oh / 3, ow - ow / 5, oh / 3, ow / 5},
                            {oh - 1, 0, 1, ow}, {0, ow - 1, oh, 1}, {oh / 2, ow / 2, 1, 1}};
  std::vector<Window> ok;
  for (const Window& w : ws)
    if (w.h > 0 && w.w > 0) ok.push_back(w);
  return ok;
}

std::string in_size_str(SizeHW s) { return std::to_string(s.h) + "x" + std::to_string(s.w); }

// Compares resize_window over each window with the crop of the full resize, bit for bit.
void check_windows(const Tensor& full_in, SizeHW out_size, DType out_type, const ResizeOptions& opt,
                   ResizeWorkspace& ws, int& checked) {
  const SizeHW in_size{full_in.shape()[0], full_in.shape()[1]};
  const int64_t c = full_in.shape()[2];
  Tensor full_out = Tensor::empty({out_size.h, out_size.w, c}, out_type, Layout::kHWC);
  ASSERT_TRUE(resize(full_in.view(), full_out.view(), opt, ws).is_ok());
  for (const Window& win : windows_of(out_size.h, out_size.w)) {
    const std::string what = "filter " + std::to_string(static_cast<int>(opt.filter)) + " aa " +
                             std::to_string(opt.antialias) + " pillow " + std::to_string(opt.pillow) + " " + in_size_str(in_size) + " -> " +
                             in_size_str(out_size) + " window (" + std::to_string(win.y) + "," +
                             std::to_string(win.x) + ") " + std::to_string(win.h) + "x" + std::to_string(win.w);
    auto span = resize_source_span(in_size, out_size, {win.y, win.x}, {win.h, win.w}, opt, &ws);
    ASSERT_TRUE(span.is_ok()) << what << ": " << span.status().to_string();
    ASSERT_TRUE(span->y0 >= 0 && span->x0 >= 0 && span->y1 <= in_size.h && span->x1 <= in_size.w) << what;
    const ConstTensorView view = ConstTensorView(full_in.view()).crop_hw(span->y0, span->x0, span->h(), span->w());
    const Tensor copy_of_span = dense_copy(view);
    for (const ConstTensorView& src : {view, ConstTensorView(copy_of_span.view())}) {
      Tensor got = Tensor::empty({win.h, win.w, c}, out_type, Layout::kHWC);
      const Status st = resize_window(src, {span->y0, span->x0}, in_size, got.view(), {win.y, win.x},
                                      out_size, opt, ws);
      ASSERT_TRUE(st.is_ok()) << what << ": " << st.to_string();
      Tensor want = dense_copy(ConstTensorView(full_out.view()).crop_hw(win.y, win.x, win.h, win.w));
      ASSERT_EQ(std::memcmp(got.data(), want.data(), want.num_bytes()), 0) << what;
      ++checked;
    }
  }
}

class ResizeWindowTest : public ::testing::Test {
 protected:
  void SetUp() override { HDL_REQUIRE_CORPUS(); }
};

TEST_F(ResizeWindowTest, WindowsEqualCropsOfTheFullResizeBitForBit) {
  const auto images = photos();
  ASSERT_FALSE(images.empty());
  ResizeWorkspace ws;
  int checked = 0;
  for (const Tensor& u8 : images) {
    const int64_t h = u8.shape()[0], w = u8.shape()[1];
    const Tensor f32 = as_float(u8);
    // Downscale, Resize(256)-like, upscale, mixed, one axis unchanged, both unchanged.
    const std::vector<SizeHW> sizes = {{224, 224}, resize_output_size({h, w}, std::vector<int64_t>{256}),
                                       {h * 2 + 1, w + 37}, {h / 3, w * 2}, {h, w / 2 + 1}, {h, w}};
    for (auto f : {ResizeFilter::kNearest, ResizeFilter::kLinear, ResizeFilter::kCubic,
                   ResizeFilter::kBox, ResizeFilter::kLanczos}) {
      // antialias or not (torch), and Pillow's weights and rounding (antialias ignored).
      for (const ResizeOptions opt : {ResizeOptions{f, true}, ResizeOptions{f, false}, ResizeOptions{f, true, true}}) {
        for (const SizeHW& s : sizes) {
          check_windows(u8, s, DType::kU8, opt, ws, checked);
          check_windows(f32, s, DType::kF32, opt, ws, checked);
          check_windows(u8, s, DType::kF32, opt, ws, checked);
        }
      }
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST_F(ResizeWindowTest, SourceThatMissesTheSpanIsRejected) {
  const auto images = photos();
  ASSERT_FALSE(images.empty());
  const Tensor& img = images[0];
  const SizeHW in{img.shape()[0], img.shape()[1]};
  const SizeHW out{224, 224};
  ResizeWorkspace ws;
  auto span = resize_source_span(in, out, {100, 50}, {64, 64}, {}, &ws);
  ASSERT_TRUE(span.is_ok());
  Tensor dst = Tensor::empty({64, 64, 3}, DType::kU8, Layout::kHWC);
  // One column short on the right, one row short at the top.
  const ConstTensorView full(img.view());
  EXPECT_EQ(resize_window(full.crop_hw(span->y0, span->x0, span->h(), span->w() - 1), {span->y0, span->x0},
                          in, dst.view(), {100, 50}, out, {}, ws).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(resize_window(full.crop_hw(span->y0 + 1, span->x0, span->h() - 1, span->w()), {span->y0 + 1, span->x0},
                          in, dst.view(), {100, 50}, out, {}, ws).code(), StatusCode::kInvalidArgument);
  // A window outside the full output, and a source placed outside the full input.
  EXPECT_EQ(resize_source_span(in, out, {200, 0}, {64, 64}, {}).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(resize_window(full, {1, 0}, in, dst.view(), {0, 0}, out, {}, ws).code(), StatusCode::kInvalidArgument);
  // A source larger than the span is fine.
  EXPECT_TRUE(resize_window(full, {0, 0}, in, dst.view(), {100, 50}, out, {}, ws).is_ok());
}

}  // namespace
}  // namespace hdl::kernels
