// nvJPEG on a device vs libjpeg-turbo on ImageNet-corpus photos. nvJPEG's IDCT and chroma
// upsampling are its own, so pixels differ slightly; the bounds are calibrated from an H100's
// measurements (testing::kNvjpeg*Bound, docs/PARITY.md). Skips without a device or libnvjpeg.
#include <gtest/gtest.h>

#include <cmath>

#include "decoders/nvjpeg/nvjpeg_decoder.h"
#include "tests/cuda/cuda_test_util.h"

namespace hdl {
namespace {

TEST(NvjpegGpuTest, DecodesPhotosCloseToLibjpeg) {
  HDL_REQUIRE_CUDA_DEVICE();
  HDL_REQUIRE_CORPUS();
  if (Status s = nvjpeg_status(); !s.is_ok()) GTEST_SKIP() << "nvjpeg unavailable: " << s.message();
  std::vector<std::filesystem::path> paths;
  for (const auto& e : std::filesystem::recursive_directory_iterator(testing::corpus_dir() / "imagenet" / "train"))
    if (e.path().extension() == ".JPEG") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  NvjpegDecoder nv;
  DecoderSet cpu;
  Result<cuda::Stream> stream = cuda::Stream::create(Device::cuda(0));
  ASSERT_TRUE(stream.is_ok());
  double worst_mean = 0, worst_max = 0;
  std::vector<double> means;
  int decoded = 0;
  for (size_t i = 0; i < paths.size() && decoded < 20; ++i) {
    const std::vector<uint8_t> bytes = testing::read_file(paths[i]);
    Result<ImageInfo> info = nv.read_info(bytes);
    if (!info.is_ok()) continue;  // progressive / CMYK: the CPU's
    DecodeRequest req;
    Result<Shape> shape = nv.output_shape(*info, req);
    if (!shape.is_ok()) continue;
    Tensor want = Tensor::empty(*shape, DType::kU8, Layout::kHWC);
    ASSERT_TRUE(cpu.decode(bytes, req, want.view()).is_ok());
    // Alternate host output and device output.
    Tensor got;
    if (decoded % 2 == 0) {
      got = Tensor::empty(*shape, DType::kU8, Layout::kHWC);
      ASSERT_TRUE(nv.decode(bytes, req, got.view()).is_ok()) << paths[i];
    } else {
      Tensor dev = Tensor::empty(*shape, DType::kU8, Layout::kHWC, cuda::device_allocator(0));
      ASSERT_TRUE(nv.decode(bytes, req, dev.view()).is_ok()) << paths[i];
      got = testing::to_host(dev, *stream);
    }
    double sum = 0, mx = 0;
    for (int64_t k = 0; k < want.num_elements(); ++k) {
      const double d = std::fabs(double(want.typed<uint8_t>()[k]) - double(got.typed<uint8_t>()[k]));
      sum += d, mx = std::max(mx, d);
    }
    const double mean = sum / double(want.num_elements());
    EXPECT_LE(mean, testing::kNvjpegMeanBound) << paths[i];
    EXPECT_LE(mx, testing::kNvjpegMaxBound) << paths[i];
    means.push_back(mean);
    worst_mean = std::max(worst_mean, mean), worst_max = std::max(worst_max, mx);
    ++decoded;
  }
  EXPECT_GT(decoded, 0);
  std::sort(means.begin(), means.end());
  if (!means.empty()) EXPECT_LE(means[means.size() / 2], testing::kNvjpegMedianMeanBound);
  EXPECT_EQ(nv.stats().decoded, static_cast<uint64_t>(decoded));
  std::cout << "[ nvjpeg ] " << decoded << " photos vs libjpeg-turbo: worst mean " << worst_mean
            << ", worst max " << worst_max << "\n";
}

}  // namespace
}  // namespace hdl
