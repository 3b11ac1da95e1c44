// Helpers for the CUDA tests: the device skip, corpus photos, host <-> device copies, diffs.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "decoders/decoder_set.h"
#include "media/cuda/allocator.h"
#include "media/cuda/runtime.h"
#include "media/cuda/stream.h"
#include "media/tensor.h"
#include "pipeline/pipeline.h"
#include "tests/test_util.h"

/// Skips the current test, visibly, when no CUDA device is usable.
#define HDL_REQUIRE_CUDA_DEVICE()                                                  \
  do {                                                                             \
    if (!::hdl::cuda::available())                                                 \
      GTEST_SKIP() << "no CUDA device: " << ::hdl::cuda::unavailable_reason();     \
  } while (0)

namespace hdl::testing {

/// nvJPEG's pixels against libjpeg-turbo's (docs/PARITY.md, "Decoding on the device"): its IDCT
/// and chroma upsampling are its own. Measured on an H100 over 3,600 corpus photos: mean |diff|
/// per photo median 1.6, worst 3.5; max |diff| 46-58. Allowed: per photo mean <= 4 and max <= 64,
/// and over the photos a median mean <= 2 (a decoder that is off everywhere fails that).
inline constexpr double kNvjpegMeanBound = 4.0;
inline constexpr double kNvjpegMaxBound = 64.0;
inline constexpr double kNvjpegMedianMeanBound = 2.0;

/// A fixture holding a stream on cuda:0; skips without a device or without the corpus. A derived
/// SetUp() calls it first and returns when IsSkipped() or HasFatalFailure().
class CudaCorpusTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HDL_REQUIRE_CUDA_DEVICE();
    HDL_REQUIRE_CORPUS();
    Result<cuda::Stream> s = cuda::Stream::create(Device::cuda(0));
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    stream_ = std::move(s).value();
  }
  cuda::Stream stream_;
};

/// The first `n` ImageNet-corpus JPEGs in path order (deterministic), decoded to RGB on the CPU.
inline std::vector<Tensor> corpus_photos(size_t n) {
  std::vector<std::filesystem::path> paths;
  for (const auto& e : std::filesystem::recursive_directory_iterator(corpus_dir() / "imagenet" / "train")) {
    if (e.is_regular_file() && e.path().extension() == ".JPEG") paths.push_back(e.path());
  }
  std::sort(paths.begin(), paths.end());
  std::vector<Tensor> out;
  DecoderSet decoders;
  for (const auto& p : paths) {
    if (out.size() == n) break;
    const std::vector<uint8_t> bytes = read_file(p);
    DecodeRequest req;
    Result<Shape> shape = decoders.output_shape(bytes, req);
    if (!shape.is_ok() || (*shape)[2] != 3) continue;
    Tensor t = Tensor::empty(*shape, DType::kU8, Layout::kHWC);
    if (decoders.decode(bytes, req, t.view()).is_ok()) out.push_back(std::move(t));
  }
  return out;
}

/// A contiguous copy of `src` (host, any strides) in memory from `alloc`.
inline Tensor copy_to(const ConstTensorView& src, Allocator& alloc) {
  Tensor t = Tensor::empty(src.shape, src.dtype, src.layout, alloc);
  if (alloc.device().is_cpu()) copy(src, t.view());
  return t;
}

/// `host` (any host view) uploaded to cuda:0 through a pinned staging copy; waits.
inline Tensor to_device(const ConstTensorView& host, cuda::Stream& stream) {
  Tensor pinned = copy_to(host, cuda::pinned_host_allocator());
  Tensor dev = Tensor::empty(host.shape, host.dtype, host.layout, cuda::device_allocator(0));
  Result<cuda::Event> done = cuda::copy_async(pinned.view(), dev.view(), stream);
  EXPECT_TRUE(done.is_ok()) << done.status().to_string();
  if (done.is_ok()) EXPECT_TRUE(done->synchronize().is_ok());
  return dev;
}

/// A device tensor downloaded into a contiguous host tensor; waits.
inline Tensor to_host(const Tensor& dev, cuda::Stream& stream) {
  Tensor pinned = Tensor::empty(dev.shape(), dev.dtype(), dev.layout(), cuda::pinned_host_allocator());
  Result<cuda::Event> done = cuda::copy_async(dev.view(), pinned.view(), stream);
  EXPECT_TRUE(done.is_ok()) << done.status().to_string();
  if (done.is_ok()) EXPECT_TRUE(done->synchronize().is_ok());
  return copy_to(pinned.view(), host_allocator());
}

/// An operator's counter (PipelineStats::operators[].counters) by name, from the node named
/// `node` (any node when empty); -1 when there is none.
inline int64_t operator_counter(const PipelineStats& s, const std::string& name, const std::string& node = "") {
  for (const OperatorStats& op : s.operators)
    if (node.empty() || op.name == node)
      for (const auto& [k, v] : op.counters)
        if (k == name) return v;
  return -1;
}

/// Element-wise comparison of two contiguous host tensors of one shape and dtype.
struct Diff {
  double max_abs = 0;
  int64_t mismatches = 0;  ///< elements whose bits differ
  int64_t elements = 0;
  double mismatch_fraction() const { return elements ? double(mismatches) / double(elements) : 0; }
};

inline double element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kU8: return t.typed<uint8_t>()[i];
    case DType::kF32: return t.typed<float>()[i];
    case DType::kF16: return half_to_float(t.typed<uint16_t>()[i]);
    case DType::kBF16: return bfloat16_to_float(t.typed<uint16_t>()[i]);
    default: return 0;
  }
}

inline Diff diff(const Tensor& a, const Tensor& b) {
  Diff d;
  EXPECT_EQ(a.shape(), b.shape());
  EXPECT_EQ(a.dtype(), b.dtype());
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return d;
  d.elements = a.num_elements();
  const size_t size = dtype_size(a.dtype());
  for (int64_t i = 0; i < d.elements; ++i) {
    if (std::memcmp(static_cast<const char*>(a.data()) + i * size, static_cast<const char*>(b.data()) + i * size, size)) {
      ++d.mismatches;
      d.max_abs = std::max(d.max_abs, std::fabs(element(a, i) - element(b, i)));
    }
  }
  return d;
}

inline std::ostream& operator<<(std::ostream& os, const Diff& d) {
  return os << "max_abs=" << d.max_abs << " mismatches=" << d.mismatches << "/" << d.elements;
}

}  // namespace hdl::testing
