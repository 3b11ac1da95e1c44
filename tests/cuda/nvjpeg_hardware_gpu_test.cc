// The hardware JPEG engines (NvjpegHardwareDecoder) on a device: a batch of corpus photos
// decoded in one call, against libjpeg-turbo (nvJPEG's pixels are its own: NvjpegGpuTest's
// calibrated bounds, docs/PARITY.md) and against the per-image nvJPEG
// decoder; stream order (earlier work on the caller's stream never lands on the outputs after
// the engines); a corrupt file in the batch. Skips without a device, libnvjpeg or engines.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iostream>
#include <map>

#include "decoders/nvjpeg/nvjpeg_decoder.h"
#include "decoders/nvjpeg/nvjpeg_hardware.h"
#include "tests/cuda/cuda_test_util.h"

namespace hdl {
namespace {

struct Photo {
  std::filesystem::path path;
  std::vector<uint8_t> bytes;
  ImageInfo info;
};

// Up to `n` corpus photos the engines take, and how many they refused (by reason).
std::vector<Photo> hardware_photos(NvjpegHardwareDecoder& hw, size_t n, std::map<std::string, int>* refused) {
  std::vector<std::filesystem::path> paths;
  for (const auto& e : std::filesystem::recursive_directory_iterator(testing::corpus_dir() / "imagenet" / "train"))
    if (e.path().extension() == ".JPEG") paths.push_back(e.path());
  std::sort(paths.begin(), paths.end());
  std::vector<Photo> out;
  for (const auto& p : paths) {
    if (out.size() == n) break;
    Photo ph{p, testing::read_file(p), {}};
    Result<ImageInfo> info = hw.supports(ph.bytes, DecodeRequest{});
    if (!info.is_ok()) {
      ++(*refused)[info.status().message()];
      continue;
    }
    ph.info = *info;
    out.push_back(std::move(ph));
  }
  return out;
}

#define HDL_REQUIRE_HARDWARE(hw)                                                           \
  do {                                                                                     \
    HDL_REQUIRE_CUDA_DEVICE();                                                             \
    HDL_REQUIRE_CORPUS();                                                                  \
    if (Status s = (hw).status(); !s.is_ok()) GTEST_SKIP() << "no hardware engines: " << s.message(); \
  } while (0)

TEST(NvjpegHardwareGpuTest, BatchDecodesPhotosCloseToLibjpegAndInStreamOrder) {
  NvjpegHardwareDecoder hw;
  HDL_REQUIRE_HARDWARE(hw);
  std::map<std::string, int> refused;
  std::vector<Photo> photos = hardware_photos(hw, 64, &refused);
  ASSERT_GE(photos.size(), 8u);
  Result<cuda::Stream> stream = cuda::Stream::create(Device::cuda(0));
  ASSERT_TRUE(stream.is_ok());
  std::vector<Tensor> outs;
  std::vector<HardwareDecodeItem> items;
  for (const Photo& p : photos) {
    const Shape shape{p.info.height, p.info.width, 3};
    // Earlier work on the stream: a pattern copied over every output. It must land before the
    // engines write (the decoder drains the stream first), never after.
    Tensor pattern = Tensor::empty(shape, DType::kU8, Layout::kHWC, cuda::pinned_host_allocator());
    std::memset(pattern.data(), 0xA5, static_cast<size_t>(pattern.num_elements()));
    outs.push_back(Tensor::empty(shape, DType::kU8, Layout::kHWC, cuda::device_allocator(0)));
    ASSERT_TRUE(cuda::copy_async(pattern.view(), outs.back().view(), *stream).is_ok());
    items.push_back({p.bytes, outs.back().view()});
  }
  const std::vector<Status> got = hw.decode(items, ColorFormat::kRGB, *stream);
  for (size_t i = 0; i < got.size(); ++i) ASSERT_TRUE(got[i].is_ok()) << photos[i].path << ": " << got[i].to_string();
  EXPECT_EQ(hw.stats().batches, 1u);
  EXPECT_EQ(hw.stats().images, photos.size());

  DecoderSet cpu;
  NvjpegDecoder single;
  double worst_mean = 0, worst_max = 0, worst_vs_single = 0;
  std::vector<double> means;
  for (size_t i = 0; i < photos.size(); ++i) {
    const Tensor dev = testing::to_host(outs[i], *stream);
    Tensor want = Tensor::empty(dev.shape(), DType::kU8, Layout::kHWC);
    ASSERT_TRUE(cpu.decode(photos[i].bytes, DecodeRequest{}, want.view()).is_ok());
    double sum = 0, mx = 0;
    for (int64_t k = 0; k < want.num_elements(); ++k) {
      const double d = std::fabs(double(want.typed<uint8_t>()[k]) - double(dev.typed<uint8_t>()[k]));
      sum += d, mx = std::max(mx, d);
    }
    const double mean = sum / double(want.num_elements());
    EXPECT_LE(mean, testing::kNvjpegMeanBound) << photos[i].path;
    EXPECT_LE(mx, testing::kNvjpegMaxBound) << photos[i].path;
    means.push_back(mean);
    worst_mean = std::max(worst_mean, mean), worst_max = std::max(worst_max, mx);
    Tensor one = Tensor::empty(dev.shape(), DType::kU8, Layout::kHWC);
    if (single.decode(photos[i].bytes, DecodeRequest{}, one.view()).is_ok())
      worst_vs_single = std::max(worst_vs_single, testing::diff(dev, one).max_abs);
  }
  std::sort(means.begin(), means.end());
  EXPECT_LE(means[means.size() / 2], testing::kNvjpegMedianMeanBound);
  std::cout << "[ nvjpeg hw ] " << photos.size() << " photos in one batch; vs libjpeg-turbo worst mean "
            << worst_mean << ", worst max " << worst_max << "; vs per-image nvJPEG worst max " << worst_vs_single
            << "; refused:";
  for (const auto& [why, count] : refused) std::cout << " [" << why << "] x" << count;
  std::cout << "\n";
}

TEST(NvjpegHardwareGpuTest, ACorruptFileFailsItsBatchToTheCpuAndTheNextBatchWorks) {
  NvjpegHardwareDecoder hw;
  HDL_REQUIRE_HARDWARE(hw);
  std::map<std::string, int> refused;
  std::vector<Photo> photos = hardware_photos(hw, 4, &refused);
  ASSERT_EQ(photos.size(), 4u);
  // The header is sound (supports() accepts it) but the entropy data is cut short.
  photos[1].bytes.resize(photos[1].bytes.size() / 3);
  Result<cuda::Stream> stream = cuda::Stream::create(Device::cuda(0));
  ASSERT_TRUE(stream.is_ok());
  std::vector<Tensor> outs;
  std::vector<HardwareDecodeItem> items;
  for (const Photo& p : photos) {
    outs.push_back(Tensor::empty(Shape{p.info.height, p.info.width, 3}, DType::kU8, Layout::kHWC,
                                 cuda::device_allocator(0)));
    items.push_back({p.bytes, outs.back().view()});
  }
  const std::vector<Status> got = hw.decode(items, ColorFormat::kRGB, *stream);
  // The engines may decode a truncated file with grey where data is missing (as libjpeg with
  // allow_partial) or fail the call: either every item succeeded, or every item says
  // kUnsupported (to the CPU, which names the file's fault).
  const bool all_ok = std::all_of(got.begin(), got.end(), [](const Status& s) { return s.is_ok(); });
  const bool all_unsupported = std::all_of(got.begin(), got.end(), [](const Status& s) {
    return s.code() == StatusCode::kUnsupported;
  });
  EXPECT_TRUE(all_ok || all_unsupported) << got[1].to_string();
  std::cout << "[ nvjpeg hw ] truncated file in a batch: " << (all_ok ? "decoded" : got[1].to_string()) << "\n";
  photos[1] = hardware_photos(hw, 1, &refused)[0];
  outs[1] = Tensor::empty(Shape{photos[1].info.height, photos[1].info.width, 3}, DType::kU8, Layout::kHWC,
                          cuda::device_allocator(0));
  items[1] = {photos[1].bytes, outs[1].view()};
  for (const Status& s : hw.decode(items, ColorFormat::kRGB, *stream)) EXPECT_TRUE(s.is_ok()) << s.to_string();
  // A view that is not dense device RGB is refused, item by item.
  Tensor host = Tensor::empty(outs[0].shape(), DType::kU8, Layout::kHWC);
  const std::vector<HardwareDecodeItem> bad = {{photos[0].bytes, host.view()}};
  EXPECT_EQ(hw.decode(bad, ColorFormat::kRGB, *stream)[0].code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hdl
