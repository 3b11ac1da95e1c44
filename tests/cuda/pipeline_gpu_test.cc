// The executor's gpu stage through the C++ API: device batches equal the cpu stage's for the
// same seed, consumers order themselves with DeviceSync, early stop and device memory that
// outlives its pipeline. Also the program compute-sanitizer runs (memcheck, racecheck,
// synccheck) over the device stage: docs/CUDA.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "media/cuda/runtime.h"
#include "media/cuda/stream.h"
#include "pipeline/errors.h"
#include "pipeline/pipeline.h"
#include "tests/cuda/cuda_test_util.h"

namespace hdl {
namespace {

using testing::corpus_dir;
using testing::to_host;

// decode (RandomResizedCrop window) -> resize 160x160 -> crop_mirror_normalize (random flip),
// the resize and normalise on `stage`.
PipelineSpec train_spec(Stage stage, const std::string& dtype = "float32") {
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", (corpus_dir() / "imagenet" / "train").string()}, {"shuffle", true}},
                        {}, "reader");
  auto images = spec.add("image_decoder", {files[0]}, {{"output_type", "rgb"}, {"random_crop", "resized"}}, {}, "decode");
  auto resized = spec.add("resize", {images[0]}, {{"size", {160, 160}}}, {}, "resize", stage);
  auto coin = spec.add("coin_flip", {}, {{"probability", 0.5}}, {}, "flip");
  auto out = spec.add("crop_mirror_normalize", {resized[0]},
                      {{"mean", {0.485, 0.456, 0.406}}, {"std", {0.229, 0.224, 0.225}}, {"dtype", dtype}},
                      {{"mirror", coin[0]}}, "normalize", stage);
  spec.set_outputs({out[0], files[1]});
  return spec;
}

PipelineOptions options() { return {.batch_size = 16, .num_threads = 3, .prefetch_depth = 3, .seed = 11}; }

Tensor host_copy(const Batch& b, cuda::Stream& stream) {
  if (!b.device_sync()) return b.as_tensor();
  EXPECT_TRUE(b.device_sync()->wait_ready(stream).is_ok());
  return to_host(b.as_tensor(), stream);
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.data(), b.data(), a.num_bytes()) == 0;
}

TEST(PipelineGpuTest, GpuStageEqualsCpuStageBitForBit) {
  HDL_REQUIRE_CUDA_DEVICE();
  HDL_REQUIRE_CORPUS();
  auto stream = cuda::Stream::create(Device::cuda(0));
  ASSERT_TRUE(stream.is_ok());
  for (const char* dtype : {"float32", "bfloat16"}) {
    Pipeline cpu(train_spec(Stage::kCpu, dtype), options());
    Pipeline gpu(train_spec(Stage::kDevice, dtype), options());
    int64_t batches = 0;
    for (int epoch = 0; epoch < 2; ++epoch) {
      while (auto c = cpu.next()) {
        auto g = gpu.next();
        ASSERT_TRUE(g.has_value());
        ASSERT_TRUE(g->outputs[0].device_sync() && g->outputs[1].device_sync());
        EXPECT_TRUE(!g->outputs[0].as_tensor().device().is_cpu());
        EXPECT_TRUE(same_bytes(c->outputs[0].as_tensor(), host_copy(g->outputs[0], *stream))) << dtype << " batch " << batches;
        EXPECT_TRUE(same_bytes(c->outputs[1].as_tensor(), host_copy(g->outputs[1], *stream)));
        EXPECT_EQ(c->dataset_indices, g->dataset_indices);
        ++batches;
      }
      EXPECT_FALSE(gpu.next().has_value());
    }
    EXPECT_GT(batches, 2);
    const PipelineStats s = gpu.stats();
    EXPECT_GT(s.device_pool.bytes_allocated, 0u);
    EXPECT_GT(s.operators[2].samples, 0u);  // the gpu resize ran (batches prefetched counted too)
  }
}

TEST(PipelineGpuTest, ReleasedBatchesAreRewrittenOnlyAfterTheConsumersWork) {
  HDL_REQUIRE_CUDA_DEVICE();
  HDL_REQUIRE_CORPUS();
  auto consumer = cuda::Stream::create(Device::cuda(0));
  ASSERT_TRUE(consumer.is_ok());
  Pipeline cpu(train_spec(Stage::kCpu), options());
  Pipeline gpu(train_spec(Stage::kDevice), options());
  // The consumer copies each batch on its own stream and releases it at once; the pipeline
  // recycles the memory for later batches. Every copy must still be the batch it was.
  std::vector<Tensor> copies, want;
  for (int epoch = 0; epoch < 3; ++epoch) {
    while (auto g = gpu.next()) {
      const Batch& b = g->outputs[0];
      ASSERT_TRUE(b.device_sync()->wait_ready(*consumer).is_ok());
      Tensor copy = Tensor::empty(b.as_tensor().shape(), b.as_tensor().dtype(), b.as_tensor().layout(),
                                  cuda::device_allocator(0));
      cuda::Event done;
      auto e = cuda::Event::create(Device::cuda(0));
      ASSERT_TRUE(e.is_ok());
      done = std::move(*e);
      ASSERT_TRUE(cuda::copy_async(b.as_tensor().view(), copy.view(), *consumer, done).is_ok());
      ASSERT_TRUE(b.device_sync()->release_after(*consumer).is_ok());
      copies.push_back(std::move(copy));
    }
    while (auto c = cpu.next()) want.push_back(c->outputs[0].as_tensor());
  }
  ASSERT_EQ(copies.size(), want.size());
  for (size_t i = 0; i < copies.size(); ++i)
    EXPECT_TRUE(same_bytes(want[i], to_host(copies[i], *consumer))) << "batch " << i;
}

TEST(PipelineGpuTest, EarlyStopAndBatchesOutlivingThePipeline) {
  HDL_REQUIRE_CUDA_DEVICE();
  HDL_REQUIRE_CORPUS();
  auto stream = cuda::Stream::create(Device::cuda(0));
  ASSERT_TRUE(stream.is_ok());
  std::optional<PipelineOutput> kept;
  Tensor want;
  {
    Pipeline gpu(train_spec(Stage::kDevice), options());
    kept = gpu.next();
    ASSERT_TRUE(kept.has_value());
    want = host_copy(kept->outputs[0], *stream);
    (void)gpu.next();  // more batches in flight when the pipeline goes
  }
  EXPECT_TRUE(same_bytes(want, host_copy(kept->outputs[0], *stream)));
  // Memory does not grow with epochs: the pools reach their high-water mark (set by how many
  // batches are in flight, which timing moves a little) early; a leak of even one block per
  // epoch would pass twice the early size within these epochs.
  Pipeline gpu(train_spec(Stage::kDevice), options());
  std::vector<std::pair<uint64_t, uint64_t>> seen;
  for (int epoch = 0; epoch < 12; ++epoch) {
    while (auto g = gpu.next()) ASSERT_TRUE(g->outputs[0].device_sync()->ready().synchronize().is_ok());
    const PipelineStats s = gpu.stats();
    seen.emplace_back(s.device_pool.bytes_allocated, s.pool.bytes_allocated);
  }
  for (size_t e = 3; e < seen.size(); ++e) {
    EXPECT_LE(seen[e].first, 2 * seen[2].first) << "device memory, epoch " << e;
    EXPECT_LE(seen[e].second, 2 * seen[2].second) << "pinned memory, epoch " << e;
  }
  std::string sizes;
  for (const auto& [d, p] : seen) sizes += " " + std::to_string(d >> 10) + "/" + std::to_string(p >> 10);
  std::printf("pool KiB per epoch (device/pinned):%s\n", sizes.c_str());
}

// decode (mixed: the hardware engines and CPU threads; or cpu) -> RandomResizedCrop 96 ->
// normalise, on the device (or all on the cpu stage): tests/python/test_gpu_stage.py's mixed
// pipelines, here so that compute-sanitizer runs over the mixed stage too.
PipelineSpec mixed_spec(double hw_share, bool cpu_only = false) {
  const Stage tail = cpu_only ? Stage::kCpu : Stage::kDevice;
  PipelineSpec spec;
  auto files = spec.add("file_reader", {}, {{"file_root", (corpus_dir() / "imagenet" / "train").string()}, {"shuffle", true}},
                        {}, "reader");
  PipelineSpec::Args decode_args{{"output_type", "rgb"}};
  if (!cpu_only) decode_args.emplace_back("hw_share", hw_share);
  auto images = spec.add("image_decoder", {files[0]}, decode_args, {}, "decode", cpu_only ? Stage::kCpu : Stage::kMixed);
  auto crops = spec.add("random_resized_crop", {images[0]}, {{"size", {96, 96}}}, {}, "rrc", tail);
  auto out = spec.add("crop_mirror_normalize", {crops[0]},
                      {{"mean", {0.485, 0.456, 0.406}}, {"std", {0.229, 0.224, 0.225}}}, {}, "normalize", tail);
  spec.set_outputs({out[0], files[1]});
  return spec;
}

TEST(PipelineGpuTest, MixedStageDecodesOnTheEnginesAndCpuThreads) {
  HDL_REQUIRE_CUDA_DEVICE();
  HDL_REQUIRE_CORPUS();
  auto stream = cuda::Stream::create(Device::cuda(0));
  ASSERT_TRUE(stream.is_ok());
  std::vector<Tensor> want;
  std::vector<std::vector<int64_t>> want_indices;
  {
    Pipeline cpu(mixed_spec(0, true), options());
    for (int epoch = 0; epoch < 2; ++epoch)
      while (auto c = cpu.next()) want.push_back(c->outputs[0].as_tensor()), want_indices.push_back(c->dataset_indices);
  }
  ASSERT_GT(want.size(), 2u);
  for (double hw_share : {0.0, 1.0, -1.0}) {
    Pipeline mixed(mixed_spec(hw_share), options());
    size_t i = 0;
    double worst_mean = 0;
    int64_t images = 0;
    for (int epoch = 0; epoch < 2; ++epoch) {
      while (auto g = mixed.next()) {
        ASSERT_LT(i, want.size());
        const Tensor got = host_copy(g->outputs[0], *stream);
        EXPECT_EQ(g->dataset_indices, want_indices[i]);
        images += got.shape()[0];
        if (hw_share == 0) {  // every image on CPU threads: the cpu pipeline's values
          EXPECT_TRUE(same_bytes(want[i], got)) << "batch " << i;
        } else {  // the engines' pixels are nvJPEG's (normalised: 1 level is 1/(255 std))
          ASSERT_EQ(got.shape(), want[i].shape());
          double sum = 0;
          const float* a = got.typed<float>();
          const float* b = want[i].typed<float>();
          for (int64_t k = 0; k < got.num_elements(); ++k) sum += std::fabs(double(a[k]) - double(b[k])) * 0.226 * 255;
          worst_mean = std::max(worst_mean, sum / double(got.num_elements()));
        }
        ++i;
      }
    }
    EXPECT_EQ(i, want.size());
    EXPECT_LE(worst_mean, testing::kNvjpegMeanBound);
    const PipelineStats s = mixed.stats();
    const int64_t hw = testing::operator_counter(s, "hardware_images", "decode"), cpu = testing::operator_counter(s, "cpu_images", "decode"),
                  fallback = testing::operator_counter(s, "device_stage_cpu_images", "decode");
    // Every image counted once (prefetch may have started a third epoch).
    EXPECT_GE(hw + cpu + fallback, images);
    if (hw_share == 0) EXPECT_EQ(hw, 0);
    if (hw_share == 1) EXPECT_GT(hw, images / 2);
    std::printf("[ mixed ] hw_share %4.1f: %lld images, hardware %lld, cpu threads %lld, device-stage fallback %lld, "
                "cpu share %lld permille, worst batch mean |diff| %.3f levels\n",
                hw_share, (long long)images, (long long)hw, (long long)cpu, (long long)fallback,
                (long long)testing::operator_counter(s, "cpu_share_permille", "decode"), worst_mean);
  }
}

TEST(PipelineGpuHostTest, GpuStageWithoutADeviceIsAClearConfigError) {
  if (cuda::available()) GTEST_SKIP() << "a CUDA device is present";
  HDL_REQUIRE_CORPUS();
  try {
    Pipeline gpu(train_spec(Stage::kDevice), options());
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("resize \"resize\" (gpu)"), std::string::npos) << msg;
    EXPECT_NE(msg.find(cuda::built_with_cuda() ? cuda::unavailable_reason() : "built without CUDA"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace hdl
