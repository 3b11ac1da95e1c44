// The hybrid JPEG decode's device kernels (decoders/kernels/cuda/jpeg_hybrid.cu) against their
// host twin (kernels::jpeg_decode_batch_host), bit for bit, over one batch of corpus photos and
// test JPEGs of every layout the hybrid path decodes, at every DCT scale, whole and windowed,
// RGB / BGR / gray, EXIF-oriented, into padded slots (the padding must stay untouched). The host
// twin equals libjpeg-turbo (tests/decoders/jpeg/hybrid_jpeg_test.cc), so this makes the device
// path equal the CPU path. Skips without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <random>
#include <vector>

#include "decoders/jpeg/hybrid_batch.h"
#include "decoders/jpeg/hybrid_jpeg.h"
#include "tests/cuda/cuda_test_util.h"

namespace hdl {
namespace {

namespace fs = std::filesystem;
using ::hdl::testing::corpus_dir;
using ::hdl::testing::read_file;
using ::hdl::testing::to_device;
using ::hdl::testing::to_host;

struct Batch {
  HybridJpegBatch layout;
  std::vector<uint8_t> upload;
  int64_t out_bytes = 0;
};

// Plans, lays out and Huffman-decodes a batch of `files` with requests varied by position.
Batch make_batch(const std::vector<fs::path>& files, uint32_t seed) {
  Batch b;
  HybridJpegDecoder hybrid;
  std::mt19937 rng(seed);
  std::vector<std::vector<uint8_t>> bytes;
  std::vector<DecodeRequest> reqs;
  std::vector<HybridJpegPlan> plans;
  for (size_t i = 0; i < files.size(); ++i) {
    std::vector<uint8_t> data = read_file(files[i]);
    auto whole = hybrid.plan(data, DecodeRequest{});
    if (!whole.is_ok()) continue;  // a layout the hybrid path refuses
    const int64_t W = whole->shape[1], H = whole->shape[0];
    DecodeRequest req;
    req.color = i % 7 == 3 ? ColorFormat::kGray : i % 7 == 5 ? ColorFormat::kBGR : ColorFormat::kRGB;
    req.apply_orientation = i % 11 == 0;
    const int d = 1 << (i % 4);
    if (i % 3 != 0 && !req.apply_orientation) {
      req.roi.w = std::uniform_int_distribution<int64_t>(1, W)(rng);
      req.roi.h = std::uniform_int_distribution<int64_t>(1, H)(rng);
      req.roi.x = std::uniform_int_distribution<int64_t>(0, W - req.roi.w)(rng);
      req.roi.y = std::uniform_int_distribution<int64_t>(0, H - req.roi.h)(rng);
    }
    const int64_t rw = req.roi.empty() ? W : req.roi.w, rh = req.roi.empty() ? H : req.roi.h;
    req.min_width = (rw + d - 1) / d;
    req.min_height = (rh + d - 1) / d;
    auto plan = hybrid.plan(data, req);
    if (!plan.is_ok()) continue;
    const Shape s = plan->shape;
    b.layout.add(*plan, b.out_bytes, (s[1] + 5) * s[2], s[2]);  // 5 pixels of padding per row
    b.out_bytes += s[0] * (s[1] + 5) * s[2];
    bytes.push_back(std::move(data));
    reqs.push_back(req);
    plans.push_back(*plan);
  }
  b.upload.resize(b.layout.upload_bytes());
  b.layout.write_geometry(b.upload.data());
  for (int i = 0; i < b.layout.size(); ++i) {
    std::span<int16_t> coefs(b.layout.coefficients(b.upload.data(), i), size_t(b.layout.blocks(i)) * 64);
    std::span<uint16_t> quant(b.layout.quant(b.upload.data(), i), 64 * kernels::kJpegMaxComponents);
    Status s = hybrid.decode_coefficients(bytes[size_t(i)], plans[size_t(i)], reqs[size_t(i)], coefs, quant);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
  }
  return b;
}

class HybridJpegGpuTest : public ::hdl::testing::CudaCorpusTest {
 protected:
  // The batch decoded on the device and by the host twin, into outputs pre-filled with 0xAA.
  void expect_equal(Batch& b) {
    std::vector<uint8_t> host_out(size_t(b.out_bytes), 0xAA), scratch;
    ASSERT_TRUE(decode_batch_host(b.layout, b.upload.data(), host_out.data(), b.out_bytes, scratch).is_ok());
    const ConstTensorView upload_view(b.upload.data(), Shape{int64_t(b.upload.size())}, DType::kU8);
    Tensor dev_upload = to_device(upload_view, stream_);
    std::vector<uint8_t> aa(size_t(b.out_bytes), 0xAA);
    Tensor dev_out = to_device(ConstTensorView(aa.data(), Shape{b.out_bytes}, DType::kU8), stream_);
    Tensor dev_samples = Tensor::empty({std::max<int64_t>(1, b.layout.sample_bytes())}, DType::kU8, Layout::kNone,
                                       hdl::cuda::device_allocator(0));
    const auto t0 = std::chrono::steady_clock::now();
    Status s = decode_batch(b.layout, dev_upload.data(), static_cast<uint8_t*>(dev_samples.data()),
                            static_cast<uint8_t*>(dev_out.data()), b.out_bytes, stream_);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_TRUE(stream_.synchronize().is_ok());
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    Tensor got = to_host(dev_out, stream_);
    const uint8_t* g = static_cast<const uint8_t*>(got.data());
    int64_t differing = 0, first = -1;
    for (int64_t i = 0; i < b.out_bytes; ++i)
      if (g[i] != host_out[size_t(i)]) {
        if (first < 0) first = i;
        ++differing;
      }
    EXPECT_EQ(differing, 0) << "bytes differ from the host twin's, first at " << first;
    std::cout << "[ hybrid ] " << b.layout.size() << " images, " << b.layout.blocks() << " blocks, " << b.layout.pixels()
              << " pixels: device decode " << ms << " ms (launch to synchronize, first call included)\n";
  }
};

TEST_F(HybridJpegGpuTest, DeviceDecodeEqualsTheHostTwinOnCorpusPhotos) {
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(corpus_dir() / "imagenet" / "train"))
    if (e.is_regular_file() && e.path().extension() == ".JPEG") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<fs::path> pick;
  for (size_t i = 0; i < files.size() && pick.size() < 256; i += 7) pick.push_back(files[i]);
  Batch b = make_batch(pick, 1);
  ASSERT_GE(b.layout.size(), 200);
  expect_equal(b);
  // The same batch again: steady-state timing.
  expect_equal(b);
}

TEST_F(HybridJpegGpuTest, DeviceDecodeEqualsTheHostTwinOnEveryLayout) {
  // (Not ok/large: the phone photos would make the batch too big for compute-sanitizer.)
  std::vector<fs::path> files;
  for (const char* dir : {"ok", "exotic"})
    for (const auto& e : fs::directory_iterator(corpus_dir() / "tests" / "jpeg" / dir))
      if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  // Each file four times, so that every file meets every scale.
  std::vector<fs::path> pick;
  for (int k = 0; k < 4; ++k) pick.insert(pick.end(), files.begin(), files.end());
  Batch b = make_batch(pick, 2);
  ASSERT_GE(b.layout.size(), 100);
  expect_equal(b);
}

TEST_F(HybridJpegGpuTest, RefusesABatchThatDoesNotFitItsBuffers) {
  HybridJpegBatch empty;
  EXPECT_TRUE(decode_batch(empty, nullptr, nullptr, nullptr, 0, stream_).is_ok());
  std::vector<fs::path> one = {corpus_dir() / "tests" / "jpeg" / "ok" / "go_video001_q50_420.jpg"};
  Batch b = make_batch(one, 3);
  ASSERT_EQ(b.layout.size(), 1);
  Tensor dev_upload = to_device(ConstTensorView(b.upload.data(), Shape{int64_t(b.upload.size())}, DType::kU8), stream_);
  Tensor dev_samples = Tensor::empty({b.layout.sample_bytes()}, DType::kU8, Layout::kNone, hdl::cuda::device_allocator(0));
  Tensor dev_out = Tensor::empty({b.out_bytes}, DType::kU8, Layout::kNone, hdl::cuda::device_allocator(0));
  auto* samples = static_cast<uint8_t*>(dev_samples.data());
  auto* out = static_cast<uint8_t*>(dev_out.data());
  // The image's last pixel ends 5 pixels of row padding before out_bytes: one byte short of it.
  const kernels::JpegImageGeometry& g = b.layout.images()[0];
  const bool swap = g.orientation >= 5;
  const int64_t rows = swap ? g.width : g.height, cols = swap ? g.height : g.width;
  const int64_t end = (rows - 1) * g.out_row_stride + cols * g.out_pixel_stride;
  EXPECT_EQ(decode_batch(b.layout, dev_upload.data(), samples, out, end - 1, stream_).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(decode_batch(b.layout, dev_upload.data(), samples, out, end, stream_).is_ok());
  EXPECT_TRUE(stream_.synchronize().is_ok());
}

}  // namespace
}  // namespace hdl
