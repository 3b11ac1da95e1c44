// Video on the GPU (docs/VIDEO.md, "NVDEC"): VideoDecoder on the hardware video decoders through
// FFmpeg's cuda hwaccel against the CPU path on every corpus clip, and video_reader on the mixed
// stage against the same pipeline on the cpu stage. Each test skips, saying why, without a CUDA
// device; the host tests check what a machine without one is told.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "decoders/kernels/yuv.h"
#include "decoders/video_decoder.h"
#include "media/cuda/runtime.h"
#include "media/cuda/stream.h"
#include "media/file_system.h"
#include "pipeline/errors.h"
#include "pipeline/pipeline.h"
#include "tests/cuda/cuda_test_util.h"

namespace hdl {
namespace {

namespace fs = std::filesystem;
using testing::corpus_dir;
using testing::to_host;

fs::path video_dir() { return corpus_dir() / "video"; }

#define HDL_REQUIRE_VIDEO_CORPUS()                                                                   \
  do {                                                                                               \
    if (!fs::exists(video_dir() / "MANIFEST.tsv"))                                                   \
      GTEST_SKIP() << "video corpus not found at " << video_dir()                                    \
                   << " (run tests/corpus/make_corpus.sh)";                                          \
  } while (0)

#define HDL_REQUIRE_NVDEC()                                                                          \
  do {                                                                                               \
    HDL_REQUIRE_CUDA_DEVICE();                                                                       \
    if (Status s = video_hardware_status(0); !s.is_ok()) GTEST_SKIP() << s.message();                \
  } while (0)

std::vector<fs::path> corpus_videos() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(video_dir()))
    if (e.is_regular_file() && e.path().extension() != ".tsv" && e.path().extension() != ".txt") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// The YUV -> RGB kernel equals libswscale's 8-bit 4:2:0 converter on the CPU path; other
// formats are bounded (decoders/kernels/yuv.h).
// NVDEC's frames equal libavcodec's bit for bit where the codec's decoding is exact by its standard
// (H.264, HEVC, VP8, VP9, AV1: integer transforms) and the kernel's YUV -> RGB emulates libswscale
// (8-bit 4:2:0). MPEG-2 / MPEG-4 Part 2 / VC-1 only bound their IDCT's error (IEEE 1180), so two
// conforming decoders differ by a few levels there (measured on an H200: MPEG-4 ASP max 6).
bool exact_codec(const std::string& codec) {
  return codec == "h264" || codec == "hevc" || codec == "vp8" || codec == "vp9" || codec == "av1";
}
bool exact_format(const std::string& pixel_format, const std::string& codec) {
  return (pixel_format == "yuv420p" || pixel_format == "yuvj420p") && exact_codec(codec);
}

struct PixelDiff {
  int64_t values = 0, differing = 0;
  double sum = 0;
  int max = 0;
  void add(const Tensor& a, const Tensor& b) {
    const auto* x = static_cast<const uint8_t*>(a.data());
    const auto* y = static_cast<const uint8_t*>(b.data());
    for (int64_t i = 0; i < a.num_elements(); ++i) {
      const int d = std::abs(int(x[i]) - int(y[i]));
      sum += d, differing += d != 0, max = std::max(max, d);
    }
    values += a.num_elements();
  }
  double mean() const { return values ? sum / double(values) : 0; }
};

// Every corpus clip, 16 frames 2 apart from the middle (a seek, frames skipped) and the first 8:
// NVDEC's frames (converted on the device) against the CPU decoder's; what NVDEC refuses is a
// kUnsupported "NVDEC ..." the caller turns into a CPU decode.
TEST(VideoGpuTest, NvdecFramesEqualTheCpuPath) {
  HDL_REQUIRE_NVDEC();
  HDL_REQUIRE_VIDEO_CORPUS();
  auto stream = cuda::Stream::create(Device::cuda(0));
  ASSERT_TRUE(stream.is_ok());
  VideoDecoder cpu;
  VideoDecoderOptions o;
  o.device = Device::cuda(0);
  o.cuda_stream = stream->handle();
  VideoDecoder gpu(o);
  int decoded = 0;
  for (const fs::path& path : corpus_videos()) {
    auto file = posix_file_system()->open(path.string());
    ASSERT_TRUE(file.is_ok());
    auto info = cpu.probe(**file);
    if (!info.is_ok()) continue;  // not a video (the corpus's bad files are the CPU tests')
    const int64_t n = info->num_frames();
    std::vector<std::vector<int64_t>> clips = {{}};
    for (int64_t i = 0; i < std::min<int64_t>(8, n); ++i) clips[0].push_back(i);
    if (n >= 31) {
      clips.emplace_back();
      for (int64_t i = 0; i < 16; ++i) clips.back().push_back((n - 31) / 2 + 2 * i);
    }
    const std::string name = path.filename().string();
    if (Status s = gpu.device_supports(*info); !s.is_ok()) {
      std::printf("[ nvdec ] %-44s %-12s not for NVDEC: %s\n", name.c_str(), info->pixel_format.c_str(), s.message().c_str());
      EXPECT_EQ(s.code(), StatusCode::kUnsupported) << name;
      continue;
    }
    PixelDiff d;
    bool refused = false;
    for (const auto& frames : clips) {
      const Shape shape{int64_t(frames.size()), info->display_height(), info->display_width(), 3};
      Tensor want = Tensor::empty(shape, DType::kU8, Layout::kFHWC);
      ASSERT_TRUE(cpu.decode_into(**file, *info, frames, want.view()).is_ok()) << name;
      Tensor got_dev = Tensor::empty(shape, DType::kU8, Layout::kFHWC, cuda::device_allocator(0));
      VideoDecodeReport report;
      Status s = gpu.decode_into(**file, *info, frames, got_dev.view(), &report);
      if (s.code() == StatusCode::kUnsupported) {
        std::printf("[ nvdec ] %-44s %-12s refused: %s\n", name.c_str(), info->pixel_format.c_str(), s.message().c_str());
        EXPECT_NE(s.message().find("NVDEC"), std::string::npos) << s.message();
        refused = true;
        break;
      }
      ASSERT_TRUE(s.is_ok()) << name << ": " << s.to_string();
      EXPECT_TRUE(report.on_device);
      d.add(to_host(got_dev, *stream), want);
    }
    if (refused) continue;
    ++decoded;
    std::printf("[ nvdec ] %-44s %-12s mean |diff| %.4f max %d differing %.3f%%\n", name.c_str(),
                info->pixel_format.c_str(), d.mean(), d.max, 100.0 * double(d.differing) / double(d.values));
    if (exact_format(info->pixel_format, info->codec)) {
      EXPECT_EQ(d.differing, 0) << name << ": NVDEC's YUV or the kernel differs from the CPU path (max " << d.max << ")";
    } else {
      EXPECT_LE(d.mean(), kernels::kYuvTwinMeanBound) << name;
      EXPECT_LE(d.max, kernels::kYuvTwinMaxBound) << name;
    }
  }
  EXPECT_GE(decoded, 6) << "NVDEC decoded too few corpus clips (H.264, HEVC, VP9, MPEG-2, MPEG-4, MJPEG expected)";
}

// Random 8-frame clips 2 apart with RandomResizedCrop 112 (fused), flip and normalise: the
// reader on the mixed stage (NVDEC; CPU threads for what it refuses) with the normalise on the
// gpu stage, against the same pipeline on the cpu stage, for the same seed.
PipelineSpec clip_spec(Stage reader, Stage tail) {
  PipelineSpec spec;
  auto clips = spec.add("video_reader", {},
                        {{"file_root", video_dir().string()}, {"frames_per_clip", int64_t{8}}, {"step", int64_t{2}},
                         {"random_crop", "resized"}, {"resize", std::vector<int64_t>{112, 112}}, {"shuffle", true},
                         {"clips_per_video", int64_t{2}}},
                        {}, "reader", reader);
  auto coin = spec.add("coin_flip", {}, {{"probability", 0.5}}, {}, "flip");
  auto out = spec.add("crop_mirror_normalize", {clips[0]},
                      {{"mean", {0.43216, 0.394666, 0.37645}}, {"std", {0.22803, 0.22145, 0.216989}},
                       {"output_layout", "CFHW"}},
                      {{"mirror", coin[0]}}, "normalize", tail);
  spec.set_outputs({out[0], clips[1], clips[2], clips[3]});
  return spec;
}

PipelineOptions clip_options() {
  return {.batch_size = 4, .num_threads = 4, .prefetch_depth = 2, .seed = 5, .on_error = ErrorPolicy::kSkip};
}

Tensor host_copy(const Batch& b, cuda::Stream& stream) {
  if (!b.device_sync()) return b.as_tensor();
  EXPECT_TRUE(b.device_sync()->wait_ready(stream).is_ok());
  return to_host(b.as_tensor(), stream);
}

TEST(VideoGpuTest, MixedReaderEqualsTheCpuReader) {
  HDL_REQUIRE_NVDEC();
  HDL_REQUIRE_VIDEO_CORPUS();
  auto stream = cuda::Stream::create(Device::cuda(0));
  ASSERT_TRUE(stream.is_ok());
  // The videos' decoded formats, by their index in the dataset (the reader's output 3).
  std::map<int64_t, std::string> formats;
  Pipeline cpu(clip_spec(Stage::kCpu, Stage::kCpu), clip_options());
  Pipeline gpu(clip_spec(Stage::kMixed, Stage::kDevice), clip_options());
  VideoDecoder probe;
  int64_t samples = 0, exact_samples = 0;
  for (int epoch = 0; epoch < 2; ++epoch) {
    while (auto c = cpu.next()) {
      auto g = gpu.next();
      ASSERT_TRUE(g.has_value());
      EXPECT_EQ(c->dataset_indices, g->dataset_indices);
      for (int i = 1; i < 4; ++i)
        EXPECT_EQ(std::memcmp(c->outputs[i].as_tensor().data(), host_copy(g->outputs[i], *stream).data(),
                              c->outputs[i].as_tensor().num_bytes()), 0) << "output " << i;
      const Tensor want = c->outputs[0].as_tensor(), got = host_copy(g->outputs[0], *stream);
      ASSERT_EQ(want.shape(), got.shape());
      const Tensor videos = c->outputs[3].as_tensor();
      for (int64_t s = 0; s < want.shape()[0]; ++s, ++samples) {
        const int64_t v = videos.typed<int64_t>()[s];
        if (!formats.count(v)) {
          auto f = posix_file_system()->open(cpu.dataset().path(v));
          auto info = f.is_ok() ? probe.probe(**f) : Result<VideoInfo>(f.status());
          formats[v] = info.is_ok() && exact_format(info->pixel_format, info->codec) ? "exact" : "bounded";
        }
        const size_t bytes = size_t(want.slice(s).num_bytes());
        const bool same = std::memcmp(want.slice(s).data(), got.slice(s).data(), bytes) == 0;
        const float* a = want.slice(s).typed<float>();
        const float* b = got.slice(s).typed<float>();
        double worst = 0;
        for (size_t k = 0; k < bytes / sizeof(float); ++k) worst = std::max(worst, double(std::fabs(a[k] - b[k])));
        if (formats[v] == "exact") {
          EXPECT_TRUE(same) << cpu.dataset().path(v) << " (" << formats[v] << "): max |diff| " << worst;
          ++exact_samples;
        } else {
          // Normalised by std ~0.22: kYuvTwinMaxBound grey levels, then the RandomResizedCrop's resize.
          EXPECT_LE(worst, kernels::kYuvTwinMaxBound / 255.0 / 0.216989 + 1e-4) << cpu.dataset().path(v);
        }
      }
    }
    EXPECT_FALSE(gpu.next().has_value());
  }
  EXPECT_GT(exact_samples, 0);
  const PipelineStats s = gpu.stats();
  const int64_t device_clips = testing::operator_counter(s, "video_device_clips"), cpu_clips = testing::operator_counter(s, "video_cpu_clips");
  std::printf("[ nvdec ] mixed reader: %lld samples compared, %lld clips on NVDEC, %lld on CPU threads, %lld videos refused, "
              "%lld device failures\n", static_cast<long long>(samples), static_cast<long long>(device_clips),
              static_cast<long long>(cpu_clips), static_cast<long long>(testing::operator_counter(s, "video_device_refused_videos")),
              static_cast<long long>(testing::operator_counter(s, "video_device_failures")));
  EXPECT_GT(device_clips, 0);
  EXPECT_EQ(device_clips + cpu_clips, testing::operator_counter(s, "video_clips"));  // each clip decoded once
  EXPECT_EQ(testing::operator_counter(s, "video_device_failures"), 0);
}

// crop_mirror_normalize on the gpu stage takes clips (one launch per clip, CFHW written through
// a strided view): the same bytes as on the cpu stage, in every output layout.
TEST(VideoGpuTest, ClipNormaliseOnTheGpuStageEqualsTheCpuStage) {
  HDL_REQUIRE_CUDA_DEVICE();
  HDL_REQUIRE_VIDEO_CORPUS();
  auto stream = cuda::Stream::create(Device::cuda(0));
  ASSERT_TRUE(stream.is_ok());
  for (const char* layout : {"CFHW", "CHW", "HWC"}) {
    auto spec = [&](Stage tail) {
      PipelineSpec s;
      auto clips = s.add("video_reader", {},
                         {{"file_root", video_dir().string()}, {"frames_per_clip", int64_t{4}}, {"step", int64_t{3}},
                          {"resize", std::vector<int64_t>{72, 96}}, {"shuffle", true}},
                         {}, "reader");
      auto coin = s.add("coin_flip", {}, {{"probability", 0.5}}, {}, "flip");
      auto out = s.add("crop_mirror_normalize", {clips[0]},
                       {{"mean", {0.43216, 0.394666, 0.37645}}, {"std", {0.22803, 0.22145, 0.216989}},
                        {"output_layout", layout}, {"crop", std::vector<int64_t>{64, 80}}, {"dtype", "float16"}},
                       {{"mirror", coin[0]}}, "normalize", tail);
      s.set_outputs({out[0], clips[1]});
      return s;
    };
    Pipeline cpu(spec(Stage::kCpu), clip_options());
    Pipeline gpu(spec(Stage::kDevice), clip_options());
    int64_t batches = 0;
    while (auto c = cpu.next()) {
      auto g = gpu.next();
      ASSERT_TRUE(g.has_value());
      const Tensor want = c->outputs[0].as_tensor(), got = host_copy(g->outputs[0], *stream);
      ASSERT_EQ(want.shape(), got.shape()) << layout;
      EXPECT_EQ(std::memcmp(want.data(), got.data(), want.num_bytes()), 0) << layout << " batch " << batches;
      ++batches;
    }
    EXPECT_GT(batches, 2);
  }
}

// Without a device the mixed reader is refused when the pipeline is built, naming the node and
// CUDA's reason; the decoder on a cuda device says NVDEC is not there.
TEST(VideoGpuHostTest, NoDeviceIsAClearError) {
  if (cuda::available()) GTEST_SKIP() << "a CUDA device is present";
  HDL_REQUIRE_VIDEO_CORPUS();
  try {
    Pipeline p(clip_spec(Stage::kMixed, Stage::kDevice), clip_options());
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("video_reader \"reader\" (mixed)"), std::string::npos) << msg;
    EXPECT_NE(msg.find(cuda::built_with_cuda() ? cuda::unavailable_reason() : "built without CUDA"), std::string::npos) << msg;
  }
  const Status hw = video_hardware_status(0);
  EXPECT_EQ(hw.code(), StatusCode::kUnsupported);
  EXPECT_NE(hw.message().find("NVDEC"), std::string::npos) << hw.message();
  auto file = posix_file_system()->open((video_dir() / "original/office_h264_320x240.mp4").string());
  ASSERT_TRUE(file.is_ok());
  VideoDecoderOptions o;
  o.device = Device::cuda(0);
  VideoDecoder gpu(o);
  auto info = gpu.probe(**file);  // probing demuxes on the CPU
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  EXPECT_EQ(gpu.device_supports(*info).code(), StatusCode::kUnsupported);
  // MJPEG stays on CPU threads, with or without a device (NVDEC's frames differed).
  auto mjpeg = posix_file_system()->open((video_dir() / "original/webcam_mjpeg_160x120.avi").string());
  ASSERT_TRUE(mjpeg.is_ok());
  auto mjpeg_info = gpu.probe(**mjpeg);
  ASSERT_TRUE(mjpeg_info.is_ok()) << mjpeg_info.status().to_string();
  const Status refused = gpu.device_supports(*mjpeg_info);
  EXPECT_EQ(refused.code(), StatusCode::kUnsupported);
  EXPECT_NE(refused.message().find("MJPEG"), std::string::npos) << refused.message();
  const std::vector<int64_t> frames = {0, 1};
  Status s = gpu.decode_only(**file, *info, frames);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported) << s.to_string();
  EXPECT_NE(s.message().find("NVDEC"), std::string::npos) << s.message();
}

// Pillow's resampling has no device kernel: the mixed reader refuses it when built.
TEST(VideoGpuHostTest, MixedReaderRefusesPillowResampling) {
  HDL_REQUIRE_VIDEO_CORPUS();
  PipelineSpec spec;
  auto clips = spec.add("video_reader", {},
                        {{"file_root", video_dir().string()}, {"resize", std::vector<int64_t>{112, 112}}, {"pillow", true}},
                        {}, "reader", Stage::kMixed);
  spec.set_outputs({clips[0]});
  try {
    Pipeline p(spec, clip_options());
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("pillow"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hdl
