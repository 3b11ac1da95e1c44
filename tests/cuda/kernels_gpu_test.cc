// Device kernels (pipeline/kernels/cuda) vs the CPU kernels on real corpus photos. Bounds (also
// in docs/CUDA.md): crop, flip, swap_red_blue, crop_mirror_normalize: exact; grayscale,
// brightness, saturation, contrast, hue: exact intended, max 1 level on <= 0.1% of values
// allowed; resize: exact intended, max 1 level on <= 0.1% of values (float32 output: max 1e-3)
// allowed. Every test skips without a device.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pipeline/kernels/color.h"
#include "pipeline/kernels/crop.h"
#include "pipeline/kernels/cuda/color.h"
#include "pipeline/kernels/cuda/geometry.h"
#include "pipeline/kernels/cuda/normalize.h"
#include "pipeline/kernels/cuda/resize.h"
#include "pipeline/kernels/normalize.h"
#include "pipeline/kernels/resize.h"
#include "tests/cuda/cuda_test_util.h"

namespace hdl::kernels {
namespace {

using ::hdl::testing::corpus_photos;
using ::hdl::testing::Diff;
using ::hdl::testing::diff;
using ::hdl::testing::to_device;
using ::hdl::testing::to_host;

class DeviceKernelsTest : public ::hdl::testing::CudaCorpusTest {
 protected:
  void SetUp() override {
    CudaCorpusTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    photos_ = corpus_photos(4);
    ASSERT_EQ(photos_.size(), 4u);
    for (const Tensor& p : photos_) device_photos_.push_back(to_device(p.view(), stream_));
  }
  Tensor device_empty(Shape s, DType t, Layout l = Layout::kHWC) {
    return Tensor::empty(s, t, l, hdl::cuda::device_allocator(0));
  }
  Tensor download(const Tensor& d) { return to_host(d, stream_); }

  cuda::DeviceWorkspace ws_{Device::cuda(0)};
  std::vector<Tensor> photos_, device_photos_;
};

void expect_close(const Diff& d, double max_abs, double max_fraction, const std::string& what) {
  EXPECT_LE(d.max_abs, max_abs) << what << ": " << d;
  EXPECT_LE(d.mismatch_fraction(), max_fraction) << what << ": " << d;
}

TEST_F(DeviceKernelsTest, ResizeMatchesCpu) {
  const ResizeOptions options[] = {{ResizeFilter::kNearest, false}, {ResizeFilter::kLinear, true},
                                   {ResizeFilter::kLinear, false},  {ResizeFilter::kCubic, true},
                                   {ResizeFilter::kBox, true},      {ResizeFilter::kLanczos, true}};
  ResizeWorkspace cpu_ws;
  Diff worst;
  for (size_t i = 0; i < photos_.size(); ++i) {
    const int64_t H = photos_[i].shape()[0], W = photos_[i].shape()[1];
    // The whole photo, and a window of it (strided rows, as a crop_hw view).
    const ConstTensorView host_views[] = {photos_[i].view(), ConstTensorView(photos_[i].view()).crop_hw(5, 9, H - 17, W - 13)};
    const ConstTensorView dev_views[] = {device_photos_[i].view(), ConstTensorView(device_photos_[i].view()).crop_hw(5, 9, H - 17, W - 13)};
    for (int v = 0; v < 2; ++v) {
      const int64_t h = host_views[v].shape[0], w = host_views[v].shape[1];
      const SizeHW sizes[] = {{224, 224}, {97, 113}, {h, 160}, {h * 2 - 1, w * 3 / 2}, {1, 5}};
      for (const SizeHW& size : sizes)
        for (const ResizeOptions& o : options)
          for (DType dtype : {DType::kU8, DType::kF32}) {
            Tensor cpu = Tensor::empty({size.h, size.w, 3}, dtype, Layout::kHWC);
            ASSERT_TRUE(resize(host_views[v], cpu.view(), o, cpu_ws).is_ok());
            Tensor dev = device_empty({size.h, size.w, 3}, dtype);
            const Status s = cuda::resize(dev_views[v], dev.view(), o, ws_, stream_);
            ASSERT_TRUE(s.is_ok()) << s.to_string();
            const Diff d = diff(cpu, download(dev));
            const std::string what = host_views[v].shape.to_string() + " -> " + std::to_string(size.h) + "x" +
                                     std::to_string(size.w) + " filter " + std::to_string(int(o.filter)) +
                                     " aa " + std::to_string(o.antialias) + " " + dtype_name(dtype);
            expect_close(d, dtype == DType::kU8 ? 1 : 1e-3, 0.001, what);
            worst.max_abs = std::max(worst.max_abs, d.max_abs);
            worst.mismatches += d.mismatches, worst.elements += d.elements;
          }
    }
  }
  std::cout << "[ cuda resize ] vs CPU, all cases: " << worst << "\n";
}

TEST_F(DeviceKernelsTest, CropAndFlipMatchCpuExactly) {
  for (size_t i = 0; i < photos_.size(); ++i) {
    const int64_t H = photos_[i].shape()[0], W = photos_[i].shape()[1];
    const double fill[] = {1, 2, 3};
    for (int64_t top : {int64_t(0), int64_t(-7), H - 100}) {
      Tensor cpu = Tensor::empty({120, 150, 3}, DType::kU8, Layout::kHWC);
      ASSERT_TRUE(crop(photos_[i].view(), top, W - 140, cpu.view(), fill).is_ok());
      Tensor dev = device_empty({120, 150, 3}, DType::kU8);
      ASSERT_TRUE(cuda::crop(device_photos_[i].view(), top, W - 140, dev.view(), stream_, fill).is_ok());
      EXPECT_EQ(diff(cpu, download(dev)).mismatches, 0) << "crop top " << top;
    }
    for (int f = 1; f < 4; ++f) {
      Tensor cpu = Tensor::empty({H, W, 3}, DType::kU8, Layout::kHWC);
      ASSERT_TRUE(flip(photos_[i].view(), cpu.view(), f & 1, f & 2).is_ok());
      Tensor dev = device_empty({H, W, 3}, DType::kU8);
      ASSERT_TRUE(cuda::flip(device_photos_[i].view(), dev.view(), f & 1, f & 2, stream_).is_ok());
      EXPECT_EQ(diff(cpu, download(dev)).mismatches, 0) << "flip " << f;
    }
  }
}

TEST_F(DeviceKernelsTest, BatchedCropMirrorNormalizeMatchesCpuExactly) {
  NormalizeParams norm;
  norm.mean = {0.485f, 0.456f, 0.406f};
  norm.std = {0.229f, 0.224f, 0.225f};
  const int64_t N = static_cast<int64_t>(photos_.size()), h = 224, w = 224;
  std::vector<ConstTensorView> srcs;
  std::vector<cuda::CmnWindow> windows;
  for (int64_t i = 0; i < N; ++i) {
    srcs.push_back(device_photos_[i].view());
    // Windows inside, mirrored, and leaving the image on either side.
    windows.push_back({i == 2 ? -12 : 10 * i, i == 3 ? photos_[i].shape()[1] - w + 20 : 5 * i, i % 2 == 1});
  }
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kU8})
    for (Layout layout : {Layout::kCHW, Layout::kHWC}) {
      const bool chw = layout == Layout::kCHW;
      const Shape sample = chw ? Shape{3, h, w} : Shape{h, w, 3};
      Tensor dev = device_empty(sample.prepend(N), dtype, Layout::kNone);
      cuda::CmnBatchOptions o;
      o.fill = 9, o.layout = layout, o.norm = norm;
      const Status s = cuda::crop_mirror_normalize(srcs, windows, dev.view(), o, ws_, stream_);
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      const Tensor got = download(dev);
      for (int64_t i = 0; i < N; ++i) {
        CropMirrorNormalizeOptions c;
        c.top = windows[i].top, c.left = windows[i].left, c.mirror = windows[i].mirror;
        c.fill = o.fill, c.layout = layout, c.norm = norm;
        Tensor cpu = Tensor::empty(sample, dtype, layout);
        ASSERT_TRUE(crop_mirror_normalize(photos_[i].view(), cpu.view(), c).is_ok());
        EXPECT_EQ(diff(cpu, ::hdl::testing::copy_to(got.slice(i).view(), host_allocator())).mismatches, 0)
            << dtype_name(dtype) << " " << layout_name(layout) << " sample " << i;
      }
    }
}

TEST_F(DeviceKernelsTest, ColorKernelsMatchCpu) {
  for (size_t i = 0; i < photos_.size(); ++i) {
    const ConstTensorView src = photos_[i].view(), dsrc = device_photos_[i].view();
    const Shape shape = src.shape;
    auto check = [&](const std::string& what, auto cpu_fn, auto dev_fn, int64_t out_c, bool exact) {
      Tensor cpu = Tensor::empty({shape[0], shape[1], out_c}, DType::kU8, Layout::kHWC);
      ASSERT_TRUE(cpu_fn(cpu.view()).is_ok()) << what;
      Tensor dev = device_empty({shape[0], shape[1], out_c}, DType::kU8);
      const Status s = dev_fn(dev.view());
      ASSERT_TRUE(s.is_ok()) << what << ": " << s.to_string();
      const Diff d = diff(cpu, download(dev));
      if (exact) EXPECT_EQ(d.mismatches, 0) << what << ": " << d;
      else expect_close(d, 1, 0.001, what);
    };
    check("swap_red_blue", [&](TensorView d) { return swap_red_blue(src, d); },
          [&](TensorView d) { return cuda::swap_red_blue(dsrc, d, stream_); }, 3, true);
    for (int64_t c : {int64_t(1), int64_t(3)}) {
      check("grayscale", [&](TensorView d) { return rgb_to_grayscale(src, d); },
            [&](TensorView d) { return cuda::rgb_to_grayscale(dsrc, d, stream_); }, c, false);
    }
    for (double f : {0.0, 0.6, 1.4}) {
      const std::string fs = " " + std::to_string(f);
      check("brightness" + fs, [&](TensorView d) { return adjust_brightness(src, d, f); },
            [&](TensorView d) { return cuda::adjust_brightness(dsrc, d, f, stream_); }, 3, false);
      check("contrast" + fs, [&](TensorView d) { return adjust_contrast(src, d, f); },
            [&](TensorView d) { return cuda::adjust_contrast(dsrc, d, f, ws_, stream_); }, 3, false);
      check("saturation" + fs, [&](TensorView d) { return adjust_saturation(src, d, f); },
            [&](TensorView d) { return cuda::adjust_saturation(dsrc, d, f, stream_); }, 3, false);
    }
    for (double f : {-0.5, -0.1, 0.25, 0.5}) {
      check("hue " + std::to_string(f), [&](TensorView d) { return adjust_hue(src, d, f); },
            [&](TensorView d) { return cuda::adjust_hue(dsrc, d, f, stream_); }, 3, false);
    }
  }
}

TEST_F(DeviceKernelsTest, RefusesHostViewsAndBadArguments) {
  Tensor dev = device_empty({10, 10, 3}, DType::kU8);
  EXPECT_EQ(cuda::flip(photos_[0].view(), dev.view(), true, false, stream_).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(cuda::adjust_hue(device_photos_[0].view(), dev.view(), 0.7, stream_).code(), StatusCode::kInvalidArgument);
  hdl::cuda::Stream none;
  EXPECT_EQ(cuda::resize(device_photos_[0].view(), dev.view(), {}, ws_, none).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hdl::kernels
