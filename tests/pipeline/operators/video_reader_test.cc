// video_reader inside a pipeline, on corpus clips: clips as the samplers promise, pixels equal
// to the decoder's, one crop for every frame of a clip, determinism across thread counts, and
// bad videos under the error policy.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>

#include "decoders/video_decoder.h"
#include "pipeline/errors.h"
#include "pipeline/file_system.h"
#include "pipeline/kernels/resize.h"
#include "pipeline/pipeline.h"
#include "tests/test_util.h"

namespace hdl {
namespace {

namespace fs = std::filesystem;

std::filesystem::path clip(const std::string& name) { return testing::corpus_dir() / "video" / "original" / name; }

// root/<class>/<file> links to small corpus clips: a/ office (36 frames 320x240 H.264),
// a/ webcam (68 frames 160x120 MJPEG), b/ puck (28 frames 400x300 MPEG-4), b/ tree (68 frames
// 320x240 Cinepak).
class VideoTree {
 public:
  VideoTree() : root_(fs::temp_directory_path() / ("hdl_video_tree_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++))) {
    fs::create_directories(root_ / "a");
    fs::create_directories(root_ / "b");
    fs::create_symlink(clip("office_h264_320x240.mp4"), root_ / "a" / "office.mp4");
    fs::create_symlink(clip("webcam_mjpeg_160x120.avi"), root_ / "a" / "webcam.avi");
    fs::create_symlink(clip("puck_mpeg4asp_400x300.avi"), root_ / "b" / "puck.avi");
    fs::create_symlink(clip("tree_cinepak_320x240.avi"), root_ / "b" / "tree.avi");
  }
  ~VideoTree() { fs::remove_all(root_); }
  std::string root() const { return root_.string(); }
  // A copy of the first `bytes` bytes of `source` as root/<cls>/<name>.
  void add_truncated(const std::string& cls, const std::string& name, const fs::path& source, size_t bytes) {
    std::vector<uint8_t> data = testing::read_file(source);
    data.resize(std::min(bytes, data.size()));
    std::ofstream(root_ / cls / name, std::ios::binary).write(reinterpret_cast<const char*>(data.data()), std::streamsize(data.size()));
  }

 private:
  static inline int counter_ = 0;
  fs::path root_;
};

class VideoReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HDL_REQUIRE_CORPUS();
    if (!fs::exists(clip("office_h264_320x240.mp4"))) GTEST_SKIP() << "the corpus has no video/ folder";
  }
};

PipelineSpec reader_spec(const std::string& root, PipelineSpec::Args extra) {
  PipelineSpec spec;
  PipelineSpec::Args args = {{"file_root", root}};
  for (auto& kv : extra) args.push_back(std::move(kv));
  auto r = spec.add("video_reader", {}, args, {}, "reader");
  spec.set_outputs({r[0], r[1], r[2], r[3]});
  return spec;
}

// The frames `frames` of `path`, decoded on their own.
Tensor decode_alone(const std::string& path, const std::vector<int64_t>& frames) {
  auto file = posix_file_system()->open(path);
  EXPECT_TRUE(file.is_ok());
  VideoDecoder dec;
  auto info = dec.probe(**file);
  EXPECT_TRUE(info.is_ok()) << info.status().to_string();
  Tensor t = Tensor::empty({int64_t(frames.size()), info->display_height(), info->display_width(), 3}, DType::kU8, Layout::kFHWC);
  EXPECT_TRUE(dec.decode_into(**file, *info, frames, t.view()).is_ok());
  return t;
}

TEST_F(VideoReaderTest, ContiguousClipsAreEveryClipWithTheDecodersPixels) {
  VideoTree tree;
  // 8 frames, clips 10 apart: office 36 -> 3, webcam 68 -> 7, puck 28 -> 3, tree 68 -> 7.
  Pipeline pipe(reader_spec(tree.root(), {{"sampler", "contiguous"}, {"frames_per_clip", int64_t{8}}, {"clip_stride", int64_t{10}}}),
                {.batch_size = 4, .num_threads = 2});
  ASSERT_EQ(pipe.num_samples(), 20);
  std::map<int64_t, std::vector<int64_t>> starts;  // video -> clip starts, in order
  int64_t clips = 0;
  for (const auto& out : pipe.epoch_batches()) {
    for (int64_t i = 0; i < out.outputs[0].size(); ++i, ++clips) {
      const int64_t video = *out.outputs[3].sample(i).typed<int64_t>();
      const Tensor idx = out.outputs[2].sample(i);
      std::vector<int64_t> frames(idx.typed<int64_t>(), idx.typed<int64_t>() + idx.num_elements());
      ASSERT_EQ(frames.size(), 8u);
      for (size_t t = 1; t < frames.size(); ++t) ASSERT_EQ(frames[t], frames[0] + int64_t(t));
      starts[video].push_back(frames[0]);
      EXPECT_EQ(*out.outputs[1].sample(i).typed<int64_t>(), pipe.dataset().label(video));
      if (frames[0] == 10) {  // compare a clip of each video with a decode of its own
        const Tensor want = decode_alone(pipe.dataset().path(video), frames);
        const Tensor got = out.outputs[0].sample(i);
        ASSERT_EQ(got.shape(), want.shape());
        EXPECT_EQ(std::memcmp(got.data(), want.data(), want.num_bytes()), 0) << pipe.dataset().path(video);
      }
    }
  }
  EXPECT_EQ(clips, 20);
  EXPECT_EQ(starts[0], (std::vector<int64_t>{0, 10, 20}));
  EXPECT_EQ(starts[1], (std::vector<int64_t>{0, 10, 20, 30, 40, 50, 60}));
  EXPECT_EQ(starts[2], (std::vector<int64_t>{0, 10, 20}));
}

TEST_F(VideoReaderTest, RandomClipsWithOneCropPerClipAreTheSameForAnyThreadCount) {
  VideoTree tree;
  auto spec = [&] {
    PipelineSpec s;
    auto r = s.add("video_reader", {},
                   {{"file_root", tree.root()}, {"frames_per_clip", int64_t{6}}, {"step", int64_t{2}}, {"clips_per_video", int64_t{2}},
                    {"shuffle", true}, {"random_crop", "resized"}, {"resize", std::vector<int64_t>{24, 32}}},
                   {}, "reader");
    auto coin = s.add("coin_flip", {}, {{"probability", 0.5}}, {}, "coin");
    auto n = s.add("crop_mirror_normalize", {r[0]}, {{"output_layout", "CFHW"}, {"mean", std::vector<double>{0.5}}, {"std", std::vector<double>{0.25}}},
                   {{"mirror", coin[0]}}, "norm");
    s.set_outputs({n[0], r[2], r[0]});
    return s;
  };
  auto run = [&](int threads) {
    Pipeline p(spec(), {.batch_size = 3, .num_threads = threads, .seed = 11});
    std::vector<std::vector<uint8_t>> bytes;
    for (int epoch = 0; epoch < 2; ++epoch)
      for (const auto& out : p.epoch_batches()) {
        for (const Batch& b : out.outputs)
          for (int64_t i = 0; i < b.size(); ++i) {
            const Tensor t = b.sample(i);
            const auto* d = static_cast<const uint8_t*>(t.data());
            bytes.emplace_back(d, d + t.num_bytes());
          }
        // [C, T, H, W] float: channel 0 of frame t is (x / 255 - 0.5) / 0.25 of the FHWC clip.
        const Tensor norm = out.outputs[0].sample(0), raw = out.outputs[2].sample(0);
        EXPECT_EQ(norm.shape(), (Shape{3, 6, 24, 32}));
        EXPECT_EQ(raw.shape(), (Shape{6, 24, 32, 3}));
      }
    return bytes;
  };
  const auto one = run(1), two = run(2);
  ASSERT_EQ(one.size(), two.size());
  EXPECT_TRUE(one == two);
}

TEST_F(VideoReaderTest, CfhwNormalizationOfAClipEqualsPerFrameArithmetic) {
  VideoTree tree;
  PipelineSpec s;
  auto r = s.add("video_reader", {}, {{"file_root", tree.root()}, {"frames_per_clip", int64_t{4}}, {"sampler", "uniform"}, {"center_crop", std::vector<int64_t>{64}}, {"resize", std::vector<int64_t>{80}}}, {}, "reader");
  auto n = s.add("crop_mirror_normalize", {r[0]}, {{"output_layout", "CFHW"}, {"crop", std::vector<int64_t>{32, 48}}, {"mean", std::vector<double>{0.4, 0.5, 0.6}}, {"std", std::vector<double>{0.2, 0.3, 0.4}}, {"mirror", int64_t{1}}}, {}, "norm");
  s.set_outputs({n[0], r[0]});
  Pipeline p(s, {.batch_size = 2, .num_threads = 2});
  int checked = 0;
  for (const auto& out : p.epoch_batches())
    for (int64_t i = 0; i < out.outputs[0].size(); ++i, ++checked) {
      const Tensor got = out.outputs[0].sample(i), clip = out.outputs[1].sample(i);
      ASSERT_EQ(got.shape(), (Shape{3, 4, 32, 48}));
      ASSERT_EQ(clip.shape(), (Shape{4, 64, 64, 3}));
      const double mean[3] = {0.4, 0.5, 0.6}, sd[3] = {0.2, 0.3, 0.4};
      for (int64_t c = 0; c < 3; ++c)
        for (int64_t t = 0; t < 4; ++t)
          for (int64_t y = 0; y < 32; ++y)
            for (int64_t x = 0; x < 48; ++x) {
              // centre crop (16, 8) of the 64x64 frame, mirrored
              const uint8_t v = clip.typed<uint8_t>()[((t * 64 + 16 + y) * 64 + 8 + 47 - x) * 3 + c];
              const float want = (float(v) / 255.0f - float(mean[c])) / float(sd[c]);
              ASSERT_NEAR(got.typed<float>()[((c * 4 + t) * 32 + y) * 48 + x], want, 1e-5) << c << " " << t << " " << y << " " << x;
            }
    }
  EXPECT_EQ(checked, 4);
}

TEST_F(VideoReaderTest, ClipLongerThanTheVideoFollowsTheErrorPolicyNamingTheFile) {
  VideoTree tree;
  // 16 frames step 2 span 31: puck (28 frames) cannot give a clip.
  const auto spec = reader_spec(tree.root(), {{"frames_per_clip", int64_t{16}}, {"step", int64_t{2}}});
  {
    Pipeline p(spec, {.batch_size = 4, .num_threads = 2});
    try {
      for (const auto& out : p.epoch_batches()) (void)out;
      FAIL() << "expected a DataError";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find("puck.avi"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("28 frames"), std::string::npos) << e.what();
    }
  }
  Pipeline p(spec, {.batch_size = 4, .num_threads = 2, .on_error = ErrorPolicy::kSkip});
  int64_t n = 0;
  for (const auto& out : p.epoch_batches())
    for (int64_t i = 0; i < out.outputs[3].size(); ++i, ++n)
      EXPECT_EQ(p.dataset().path(*out.outputs[3].sample(i).typed<int64_t>()).find("puck.avi"), std::string::npos);
  EXPECT_EQ(n, 4);
  EXPECT_EQ(p.stats().failures, 1u);
  // Contiguous: a video shorter than a clip has no clips (as torchvision's VideoClips).
  Pipeline c(reader_spec(tree.root(), {{"sampler", "contiguous"}, {"frames_per_clip", int64_t{16}}, {"step", int64_t{2}}, {"clip_stride", int64_t{100}}}),
             {.batch_size = 4, .num_threads = 2});
  EXPECT_EQ(c.num_samples(), 3);
}

TEST_F(VideoReaderTest, TruncatedAndNonVideoFilesFailTheirSamplesOnly) {
  VideoTree tree;
  tree.add_truncated("a", "half.mp4", clip("office_h264_320x240.mp4"), 48000);
  tree.add_truncated("b", "head.avi", clip("tree_cinepak_320x240.avi"), 1000);
  std::ofstream(fs::path(tree.root()) / "b" / "text.mp4") << "not a video";
  for (const char* sampler : {"random", "contiguous"}) {
    const auto spec = reader_spec(tree.root(), {{"sampler", sampler}, {"frames_per_clip", int64_t{8}}, {"clip_stride", int64_t{30}}});
    {
      Pipeline p(spec, {.batch_size = 2, .num_threads = 2});
      EXPECT_THROW(for (const auto& out : p.epoch_batches()) (void)out, DataError) << sampler;
    }
    Pipeline p(spec, {.batch_size = 2, .num_threads = 2, .on_error = ErrorPolicy::kSkip});
    int64_t n = 0;
    for (const auto& out : p.epoch_batches()) n += out.outputs[0].size();
    EXPECT_EQ(n, p.num_samples()) << sampler;
    EXPECT_GE(p.stats().failures, 2u) << sampler;  // head.avi and text.mp4 at least
  }
}

// The train crop of a clip (video_reader resize + crop_mirror_normalize at a uniform crop_pos
// with crop_pos_bins): every integer offset in [0, H - h] equally often, as torchvision's
// RandomCrop draws it (torch.randint(0, H - h + 1)); rounding pos * (H - h) instead gives the
// two end offsets half the others' frequency, which the chi-square test below rejects.
TEST_F(VideoReaderTest, ClipCropOffsetsAreUniformIntegers) {
  VideoTree tree;
  constexpr int64_t kH = 10, kW = 14, kCrop = 6, kClipsPerVideo = 500;
  PipelineSpec s;
  auto r = s.add("video_reader", {},
                 {{"file_root", tree.root()}, {"frames_per_clip", int64_t{1}}, {"clips_per_video", kClipsPerVideo},
                  {"resize", std::vector<int64_t>{kH, kW}}},
                 {}, "reader");
  auto px = s.add("random_uniform", {}, {{"range", std::vector<double>{0.0, 1.0}}}, {}, "px");
  auto py = s.add("random_uniform", {}, {{"range", std::vector<double>{0.0, 1.0}}}, {}, "py");
  auto c = s.add("crop_mirror_normalize", {r[0]},
                 {{"crop", std::vector<int64_t>{kCrop}}, {"crop_pos_bins", true}, {"dtype", "uint8"}, {"output_layout", "HWC"}},
                 {{"crop_pos_x", px[0]}, {"crop_pos_y", py[0]}}, "crop");
  s.set_outputs({c[0], r[0]});
  Pipeline p(s, {.batch_size = 50, .num_threads = 2, .seed = 3});
  std::vector<int64_t> rows(kH - kCrop + 1), cols(kW - kCrop + 1);
  int64_t clips = 0, ambiguous = 0;
  for (const auto& out : p.epoch_batches())
    for (int64_t i = 0; i < out.outputs[0].size(); ++i, ++clips) {
      const Tensor crop = out.outputs[0].sample(i), frame = out.outputs[1].sample(i);
      ASSERT_EQ(crop.shape(), (Shape{1, kCrop, kCrop, 3}));
      ASSERT_EQ(frame.shape(), (Shape{1, kH, kW, 3}));
      std::vector<std::pair<int64_t, int64_t>> at;  // the windows of the frame equal to the crop
      for (int64_t y = 0; y + kCrop <= kH; ++y)
        for (int64_t x = 0; x + kCrop <= kW; ++x) {
          bool same = true;
          for (int64_t row = 0; row < kCrop && same; ++row)
            same = std::memcmp(crop.typed<uint8_t>() + row * kCrop * 3, frame.typed<uint8_t>() + ((y + row) * kW + x) * 3,
                               kCrop * 3) == 0;
          if (same) at.emplace_back(y, x);
        }
      ASSERT_FALSE(at.empty()) << "clip " << clips << ": the crop is no window of the frame";
      if (at.size() > 1) {
        ++ambiguous;
        continue;
      }
      ++rows[at[0].first], ++cols[at[0].second];
    }
  ASSERT_EQ(clips, 4 * kClipsPerVideo);
  EXPECT_LT(ambiguous, clips / 100);
  // Pearson's chi-square against the uniform law; 99.99th percentiles: 23.51 (4 degrees of
  // freedom), 33.72 (8).
  auto chi2 = [](const std::vector<int64_t>& n) {
    double total = 0, x = 0;
    for (int64_t v : n) total += double(v);
    const double e = total / double(n.size());
    for (int64_t v : n) x += (double(v) - e) * (double(v) - e) / e;
    return x;
  };
  EXPECT_LT(chi2(rows), 23.51) << ::testing::PrintToString(rows);
  EXPECT_LT(chi2(cols), 33.72) << ::testing::PrintToString(cols);
  // Both end offsets come up about as often as the middle ones (rounding: half as often).
  for (const auto* n : {&rows, &cols}) {
    const double mean = double(clips - ambiguous) / double(n->size());
    EXPECT_GT(double(n->front()), 0.8 * mean) << ::testing::PrintToString(*n);
    EXPECT_GT(double(n->back()), 0.8 * mean) << ::testing::PrintToString(*n);
  }
}

TEST_F(VideoReaderTest, FusedResizeAndCenterCropEqualFullFramesResizedThenCropped) {
  VideoTree tree;
  Pipeline p(reader_spec(tree.root(), {{"sampler", "uniform"}, {"clips_per_video", int64_t{2}}, {"frames_per_clip", int64_t{3}},
                                       {"step", int64_t{5}}, {"resize", std::vector<int64_t>{90}}, {"center_crop", std::vector<int64_t>{72, 80}}}),
             {.batch_size = 3, .num_threads = 2});
  kernels::ResizeWorkspace ws;
  int checked = 0;
  for (const auto& out : p.epoch_batches())
    for (int64_t i = 0; i < out.outputs[0].size(); ++i, ++checked) {
      const Tensor idx = out.outputs[2].sample(i);
      const std::vector<int64_t> frames(idx.typed<int64_t>(), idx.typed<int64_t>() + idx.num_elements());
      const Tensor full = decode_alone(p.dataset().path(*out.outputs[3].sample(i).typed<int64_t>()), frames);
      const int64_t h = full.shape()[1], w = full.shape()[2];
      const int64_t side[1] = {90};
      const kernels::SizeHW rs = kernels::resize_output_size({h, w}, side);
      const Tensor got = out.outputs[0].sample(i);
      ASSERT_EQ(got.shape(), (Shape{3, 72, 80, 3}));
      for (int64_t t = 0; t < 3; ++t) {
        ConstTensorView frame(static_cast<const uint8_t*>(full.data()) + t * h * w * 3, Shape{h, w, 3}, DType::kU8, Layout::kHWC);
        Tensor small = Tensor::empty({rs.h, rs.w, 3}, DType::kU8, Layout::kHWC);
        ASSERT_TRUE(kernels::resize(frame, small.view(), {}, ws).is_ok());
        // CenterCrop (it fits here): round((size - crop) / 2), half to even
        const int64_t top = int64_t(std::nearbyint((rs.h - 72) / 2.0)), left = int64_t(std::nearbyint((rs.w - 80) / 2.0));
        for (int64_t y = 0; y < 72; ++y)
          ASSERT_EQ(std::memcmp(got.typed<uint8_t>() + (t * 72 + y) * 80 * 3,
                                small.typed<uint8_t>() + ((top + y) * rs.w + left) * 3, 80 * 3), 0)
              << "clip " << checked << " frame " << t << " row " << y;
      }
    }
  EXPECT_EQ(checked, 8);
}

}  // namespace
}  // namespace hdl
