// video_reader inside a pipeline, on corpus clips: clips as the samplers promise, pixels equal
// to the decoder's, one crop for every frame of a clip, determinism across thread counts, and
// bad videos under the error policy.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <set>

#include "decoders/video_decoder.h"
#include "media/file_system.h"
#include "pipeline/dataset.h"
#include "pipeline/decode/video_metadata_cache.h"
#include "pipeline/errors.h"
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

// A video's frame times in seconds from its first frame, from the decoder's timestamps.
std::vector<double> frame_times(const std::string& path) {
  auto file = posix_file_system()->open(path);
  EXPECT_TRUE(file.is_ok());
  VideoDecoder dec;
  auto info = dec.probe(**file);
  EXPECT_TRUE(info.is_ok()) << info.status().to_string();
  std::vector<double> t;
  for (int64_t pts : info->pts)
    t.push_back(double(pts - info->pts.front()) * double(info->time_base_num) / double(info->time_base_den));
  return t;
}

// The frames whose time lies in [start, end): the segment a clip must stay in.
std::vector<int64_t> frames_in(const std::vector<double>& times, double start, double end) {
  std::vector<int64_t> f;
  for (size_t i = 0; i < times.size(); ++i)
    if (times[i] >= start && times[i] < end) f.push_back(int64_t(i));
  return f;
}

int64_t counter(const Pipeline& p, const std::string& name) {
  for (const auto& op : p.stats().operators)
    for (const auto& [n, v] : op.counters)
      if (n == name) return v;
  return -1;
}

std::string write_list(const std::string& root, const std::string& name, const std::string& text) {
  const std::string path = root + "/" + name;
  std::ofstream(path) << text;
  return path;
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

int64_t counter(const PipelineStats& stats, const std::string& name) {
  for (const auto& [n, v] : stats.operators.at(0).counters)
    if (n == name) return v;
  ADD_FAILURE() << "no counter " << name;
  return -1;
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// As torchvision's VideoClips: a video shorter than one clip (puck, 28 frames, against a span
// of 31) gives no clip, with every sampler. It is left out of the clip list when the reader
// prepares (len, order, shards exact), counted, and named in one warning for all epochs.
TEST_F(VideoReaderTest, VideoShorterThanAClipGivesNoClipCountedAndNamedOnce) {
  VideoTree tree;
  for (const char* sampler : {"random", "uniform", "contiguous"}) {
    const auto spec = reader_spec(tree.root(), {{"sampler", sampler}, {"frames_per_clip", int64_t{16}}, {"step", int64_t{2}},
                                                {"clips_per_video", int64_t{2}}, {"clip_stride", int64_t{100}}, {"shuffle", true}});
    ::testing::internal::CaptureStderr();
    std::set<std::string> seen;
    int64_t n = 0;
    PipelineStats stats;
    int64_t samples = 0;
    {
      Pipeline p(spec, {.batch_size = 4, .num_threads = 2});
      samples = p.num_samples();
      for (int epoch = 0; epoch < 2; ++epoch)
        for (const auto& out : p.epoch_batches())
          for (int64_t i = 0; i < out.outputs[3].size(); ++i, ++n)
            seen.insert(p.dataset().path(*out.outputs[3].sample(i).typed<int64_t>()));
      stats = p.stats();
    }
    const std::string err = ::testing::internal::GetCapturedStderr();
    const int64_t per_video = std::string(sampler) == "contiguous" ? 1 : 2;
    EXPECT_EQ(samples, 3 * per_video) << sampler;
    EXPECT_EQ(n, 2 * 3 * per_video) << sampler;
    EXPECT_EQ(seen.size(), 3u) << sampler;
    for (const auto& path : seen) EXPECT_EQ(path.find("puck.avi"), std::string::npos) << sampler;
    EXPECT_EQ(stats.failures, 0u) << sampler;
    EXPECT_EQ(counter(stats, "videos_too_short"), 1) << sampler;
    EXPECT_EQ(occurrences(err, "give no clip"), 1u) << sampler << ": " << err;
    EXPECT_NE(err.find("1 of 4 videos give no clip"), std::string::npos) << err;
    EXPECT_NE(err.find("one clip needs 31 frames (frames_per_clip 16, step 2): \"b/puck.avi\" (28 frames)"),
              std::string::npos) << err;
  }
  // Two ranks split the three videos' clips, none lost, none twice.
  std::multiset<int64_t> ranks;
  for (int64_t shard = 0; shard < 2; ++shard) {
    Pipeline p(reader_spec(tree.root(), {{"sampler", "uniform"}, {"frames_per_clip", int64_t{16}}, {"step", int64_t{2}},
                                         {"clips_per_video", int64_t{2}}, {"shard_id", shard}, {"num_shards", int64_t{2}}}),
               {.batch_size = 2, .num_threads = 1});
    for (const auto& out : p.epoch_batches())
      for (int64_t i = 0; i < out.outputs[3].size(); ++i) ranks.insert(*out.outputs[3].sample(i).typed<int64_t>());
  }
  EXPECT_EQ(ranks.size(), 6u);
  for (int64_t v : {0, 1, 3}) EXPECT_EQ(ranks.count(v), 2u) << v;  // entry 2 is b/puck.avi
}

// The clip list without the short video is fixed when the reader prepares, so a state saved
// mid-epoch resumes the same clips (frames and videos) in the same order.
TEST_F(VideoReaderTest, ResumeWithAShortVideoLeftOutGivesTheSameClips) {
  VideoTree tree;
  const auto spec = reader_spec(tree.root(), {{"frames_per_clip", int64_t{16}}, {"step", int64_t{2}}, {"clips_per_video", int64_t{3}},
                                              {"shuffle", true}, {"output", "count"}});
  const PipelineOptions opts{.batch_size = 2, .num_threads = 2, .seed = 7};
  auto rest = [](Pipeline& p) {
    std::vector<std::vector<int64_t>> got;
    while (auto out = p.next()) {
      for (int64_t i = 0; i < out->outputs[2].size(); ++i) {
        const Tensor idx = out->outputs[2].sample(i);
        std::vector<int64_t> row(idx.typed<int64_t>(), idx.typed<int64_t>() + idx.shape()[0]);
        row.push_back(*out->outputs[3].sample(i).typed<int64_t>());
        got.push_back(std::move(row));
      }
    }
    return got;
  };
  Pipeline original(spec, opts);
  ASSERT_EQ(original.num_samples(), 9);
  ASSERT_TRUE(original.next() && original.next());
  const std::string saved = original.state().to_string();
  const auto expected = rest(original);
  ASSERT_EQ(expected.size(), 5u);
  Pipeline resumed(spec, opts);
  resumed.load_state(PipelineState::parse(saved));
  EXPECT_EQ(rest(resumed), expected);
}

TEST_F(VideoReaderTest, NoVideoLongEnoughForAClipIsAnErrorNamingTheLongestAndShortest) {
  VideoTree tree;
  // Span 79: the longest videos have 68 frames.
  try {
    Pipeline p(reader_spec(tree.root(), {{"frames_per_clip", int64_t{40}}, {"step", int64_t{2}}}), {.batch_size = 2});
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("no video is long enough for one clip: one clip needs 79 frames"), std::string::npos) << what;
    EXPECT_NE(what.find("(68 frames), the shortest \"b/puck.avi\" (28 frames)"), std::string::npos) << what;
  }
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

// "path label start end" lines: the same video on several lines, each with its own label and
// segment; contiguous clips are every clip inside each segment (VideoClips over the segment's
// frames), the video output is the line's entry, and each file is probed once.
TEST_F(VideoReaderTest, SegmentsOfAFileListGiveEveryClipInsideThem) {
  VideoTree tree;
  const std::string list = write_list(tree.root(), "segments.txt",
                                      "# path label start end\n"
                                      "a/office.mp4 5 0.5 1.0\n"
                                      "a/office.mp4 6 0 -\n"
                                      "b/tree.avi 7 1 5\n"
                                      "a/webcam.avi 8 0.2 1.5\n");
  struct Line { std::string path; int64_t label; double start, end; };
  const std::vector<Line> lines = {{"a/office.mp4", 5, 0.5, 1.0}, {"a/office.mp4", 6, 0, 1e9},
                                   {"b/tree.avi", 7, 1, 5}, {"a/webcam.avi", 8, 0.2, 1.5}};
  constexpr int64_t kFrames = 4, kStep = 2, kStride = 3, kSpan = (kFrames - 1) * kStep + 1;
  // The clips VideoClips would cut from each segment's frames.
  std::vector<std::vector<int64_t>> want;  // per line: every clip's frames, concatenated
  int64_t total = 0;
  for (const Line& l : lines) {
    const std::vector<int64_t> inside = frames_in(frame_times(tree.root() + "/" + l.path), l.start, l.end);
    ASSERT_GE(int64_t(inside.size()), kSpan) << l.path;
    std::vector<int64_t> clips;
    for (size_t s = 0; s + kSpan <= inside.size(); s += kStride)
      for (int64_t t = 0; t < kFrames; ++t) clips.push_back(inside[s + t * kStep]);
    total += int64_t(clips.size()) / kFrames;
    want.push_back(clips);
  }
  Pipeline p(reader_spec("", {{"file_list", list}, {"file_list_format", "path label start end"}, {"sampler", "contiguous"},
                              {"frames_per_clip", kFrames}, {"step", kStep}, {"clip_stride", kStride}}),
             {.batch_size = 4, .num_threads = 2});
  ASSERT_EQ(p.num_samples(), total);
  EXPECT_EQ(counter(p, "video_probes"), 3);  // office.mp4 once for its two lines
  std::vector<std::vector<int64_t>> got(lines.size());
  for (const auto& out : p.epoch_batches())
    for (int64_t i = 0; i < out.outputs[0].size(); ++i) {
      const int64_t entry = *out.outputs[3].sample(i).typed<int64_t>();
      ASSERT_GE(entry, 0);
      ASSERT_LT(entry, 4);
      EXPECT_EQ(*out.outputs[1].sample(i).typed<int64_t>(), lines[entry].label);
      const Tensor idx = out.outputs[2].sample(i);
      got[entry].insert(got[entry].end(), idx.typed<int64_t>(), idx.typed<int64_t>() + idx.num_elements());
      if (entry == 2 && got[entry].size() == kFrames) {  // the first clip of tree.avi: the decoder's pixels
        const std::vector<int64_t> frames(idx.typed<int64_t>(), idx.typed<int64_t>() + kFrames);
        const Tensor alone = decode_alone(tree.root() + "/b/tree.avi", frames);
        const Tensor clip = out.outputs[0].sample(i);
        ASSERT_EQ(clip.shape(), alone.shape());
        EXPECT_EQ(std::memcmp(clip.data(), alone.data(), alone.num_bytes()), 0);
      }
    }
  for (size_t l = 0; l < lines.size(); ++l) EXPECT_EQ(got[l], want[l]) << "line of " << lines[l].path;
}

// Random and uniform clips of segments given in memory (Dataset::from_samples) never leave
// their segment, and the random ones reach both of its ends.
TEST_F(VideoReaderTest, ClipsOfSegmentsInMemoryStayInside) {
  VideoTree tree;
  const std::vector<std::string> paths = {"a/webcam.avi", "a/webcam.avi", "b/tree.avi"};
  // tree.avi has a variable frame rate: frames at 0, 0.73, 1.13, 1.6, ... 5.93 s.
  const std::vector<Segment> segments = {{0.5, 1.2}, {1.6, std::numeric_limits<double>::infinity()}, {0.25, 6}};
  for (const char* sampler : {"random", "uniform"}) {
    const int64_t per_video = std::string(sampler) == "random" ? 150 : 40;
    PipelineSpec spec = reader_spec("", {{"sampler", sampler}, {"frames_per_clip", int64_t{3}}, {"step", int64_t{2}},
                                         {"clips_per_video", per_video}, {"output", "count"}});
    spec.nodes()[0].samples = std::make_shared<const Dataset>(Dataset::from_samples(paths, {0, 1, 2}, tree.root(), segments));
    spec.nodes()[0].args["file_root"] = ArgValue(tree.root());
    Pipeline p(spec, {.batch_size = 8, .num_threads = 2, .seed = 5});
    std::vector<std::set<int64_t>> starts(3);
    std::vector<std::vector<int64_t>> inside(3);
    for (size_t v = 0; v < 3; ++v)
      inside[v] = frames_in(frame_times(tree.root() + "/" + paths[v]), segments[v].start, segments[v].end);
    int64_t clips = 0;
    for (const auto& out : p.epoch_batches())
      for (int64_t i = 0; i < out.outputs[2].size(); ++i, ++clips) {
        const int64_t v = *out.outputs[3].sample(i).typed<int64_t>();
        const Tensor idx = out.outputs[2].sample(i);
        const int64_t* f = idx.typed<int64_t>();
        const auto at = std::find(inside[v].begin(), inside[v].end(), f[0]);
        ASSERT_NE(at, inside[v].end()) << sampler << " entry " << v << " frame " << f[0];
        const size_t pos = size_t(at - inside[v].begin());
        ASSERT_LT(pos + 4, inside[v].size()) << sampler << " entry " << v;
        for (int64_t t = 0; t < 3; ++t) EXPECT_EQ(f[t], inside[v][pos + 2 * t]);
        starts[v].insert(f[0]);
      }
    EXPECT_EQ(clips, 3 * per_video) << sampler;
    for (size_t v = 0; v < 3; ++v) {
      EXPECT_EQ(*starts[v].begin(), inside[v].front()) << sampler << " " << v;
      EXPECT_EQ(*starts[v].rbegin(), inside[v][inside[v].size() - 5]) << sampler << " " << v;
    }
    EXPECT_EQ(counter(p, "video_probes"), 2) << sampler;
  }
}

// Bad segments fail their samples under the error policy, named by file, line and segment:
// an end not after the start, a start past the video's end, a segment shorter than a clip
// (contiguous: no clips, as a short video).
TEST_F(VideoReaderTest, BadSegmentsFollowTheErrorPolicyNamingFileAndLine) {
  VideoTree tree;
  const std::string list = write_list(tree.root(), "bad.txt",
                                      "a/office.mp4 1 0 1\n"      // good: 1 s of a 36-frame video
                                      "a/office.mp4 2 1.2 1.2\n"  // empty
                                      "b/puck.avi 3 50 60\n"      // past the end
                                      "b/tree.avi 4 1 1.2\n");    // shorter than a clip (one frame)
  auto spec = [&](const char* sampler) {
    return reader_spec("", {{"file_list", list}, {"file_list_format", "path label start end"}, {"sampler", sampler},
                            {"frames_per_clip", int64_t{4}}, {"clip_stride", int64_t{4}}, {"output", "count"}});
  };
  auto failures = [&](const char* sampler, std::vector<std::string>* messages) {
    Pipeline p(spec(sampler), {.batch_size = 1, .num_threads = 1});
    for (int64_t b = 0; b < p.batches_per_epoch(); ++b) {
      try {
        (void)p.next();
      } catch (const DataError& e) {
        messages->push_back(e.what());
      }
    }
    return p.num_samples();
  };
  std::vector<std::string> random, contiguous;
  EXPECT_EQ(failures("random", &random), 4);
  ASSERT_EQ(random.size(), 3u);
  auto has = [](const std::vector<std::string>& msgs, const std::vector<std::string>& parts) {
    for (const std::string& m : msgs) {
      bool all = true;
      for (const std::string& part : parts) all = all && m.find(part) != std::string::npos;
      if (all) return true;
    }
    return false;
  };
  const std::string where = "file_list \"" + list + "\" line ";
  EXPECT_TRUE(has(random, {"office.mp4\"", "segment [1.2 s, 1.2 s) (" + where + "2): the end is not after the start"}))
      << ::testing::PrintToString(random);
  EXPECT_TRUE(has(random, {"puck.avi\"", "segment [50 s, 60 s) (" + where + "3): it starts at or after the video's end"}))
      << ::testing::PrintToString(random);
  EXPECT_TRUE(has(random, {"tree.avi\"", "segment [1 s, 1.2 s) (" + where + "4): the segment has ", "a clip needs 4"}))
      << ::testing::PrintToString(random);
  // Contiguous: the good line's clips, one failing clip each for the empty and the late
  // segment, none for the short one.
  const std::vector<double> office = frame_times(tree.root() + "/a/office.mp4");
  const int64_t good = (int64_t(frames_in(office, 0, 1).size()) - 4) / 4 + 1;
  EXPECT_EQ(failures("contiguous", &contiguous), good + 2);
  EXPECT_EQ(contiguous.size(), 2u) << ::testing::PrintToString(contiguous);
  // Under skip the failures are counted and replaced.
  Pipeline p(spec("random"), {.batch_size = 2, .num_threads = 2, .on_error = ErrorPolicy::kSkip});
  int64_t n = 0;
  for (const auto& out : p.epoch_batches()) n += out.outputs[0].size();
  EXPECT_EQ(n, 4);
  EXPECT_GE(p.stats().failures, 3u);  // a replacement may draw a bad segment again
}

// metadata_cache: the first run probes every video (any sampler) and saves the cache, the
// second probes none and gives the same clips; a changed video is probed again; a corrupt
// cache is rebuilt with one warning; a file that is not a cache is refused.
TEST_F(VideoReaderTest, MetadataCacheMakesTheSecondRunProbeNothing) {
  VideoTree tree;
  const std::string cache = tree.root() + "/meta.bin";
  for (const char* sampler : {"random", "contiguous"}) {
    fs::remove(cache);
    const auto spec = reader_spec(tree.root(), {{"sampler", sampler}, {"frames_per_clip", int64_t{4}}, {"clip_stride", int64_t{9}},
                                                {"metadata_cache", cache}, {"output", "count"}, {"shuffle", true}});
    auto run = [&](int64_t probes, int64_t hits) {
      Pipeline p(spec, {.batch_size = 3, .num_threads = 2, .seed = 4});
      EXPECT_EQ(counter(p, "video_probes"), probes) << sampler;  // all of them before the first batch
      EXPECT_EQ(counter(p, "video_metadata_cache_hits"), hits) << sampler;
      EXPECT_EQ(counter(p, "video_metadata_cache_misses"), 4 - hits) << sampler;
      std::vector<int64_t> frames;
      for (const auto& out : p.epoch_batches())
        for (int64_t i = 0; i < out.outputs[2].size(); ++i) {
          const Tensor idx = out.outputs[2].sample(i);
          frames.insert(frames.end(), idx.typed<int64_t>(), idx.typed<int64_t>() + idx.num_elements());
          frames.push_back(*out.outputs[3].sample(i).typed<int64_t>());
        }
      EXPECT_EQ(counter(p, "video_probes"), probes) << sampler;  // none later
      return frames;
    };
    const auto first = run(4, 0);
    ASSERT_TRUE(fs::exists(cache)) << sampler;
    EXPECT_EQ(run(0, 4), first) << sampler;
    EXPECT_EQ(run(0, 4), first) << sampler;
    // A video replaced by another file: only it is probed again (and its clips follow it).
    fs::remove(fs::path(tree.root()) / "b" / "puck.avi");
    fs::copy_file(clip("office_h264_320x240.mp4"), fs::path(tree.root()) / "b" / "puck.avi");
    const auto changed = run(1, 3);
    EXPECT_NE(changed, first) << sampler;
    EXPECT_EQ(run(0, 4), changed) << sampler;
    fs::remove(fs::path(tree.root()) / "b" / "puck.avi");
    fs::create_symlink(clip("puck_mpeg4asp_400x300.avi"), fs::path(tree.root()) / "b" / "puck.avi");
  }
  // Corrupt: rebuilt, with one warning naming the reader and the file.
  {
    std::fstream f(cache, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(40);
    f.put('\x7f');
  }
  const auto spec = reader_spec(tree.root(), {{"frames_per_clip", int64_t{4}}, {"metadata_cache", cache}});
  ::testing::internal::CaptureStderr();
  {
    Pipeline p(spec, {.batch_size = 2, .num_threads = 2});
    EXPECT_EQ(counter(p, "video_probes"), 4);
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("video_reader \"reader\": warning: metadata_cache \"" + cache + "\" is corrupt (checksum mismatch"),
            std::string::npos) << err;
  EXPECT_EQ(err.find("warning", err.find("warning") + 1), std::string::npos) << err;  // once
  {
    Pipeline p(spec, {.batch_size = 2, .num_threads = 2});
    EXPECT_EQ(counter(p, "video_probes"), 0);  // rebuilt
  }
  // Not a cache: refused, never overwritten.
  write_list(tree.root(), "meta.bin", "a/office.mp4 0\n");
  try {
    Pipeline p(spec, {.batch_size = 2, .num_threads = 2});
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("video_reader \"reader\": metadata_cache \"" + cache + "\" exists and is not a video metadata cache"),
              std::string::npos) << e.what();
  }
  std::ifstream in(cache);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "a/office.mp4 0\n");
}

// Segments share their video's entry: a list naming one video on three lines probes it once
// and caches one entry; the second run probes nothing.
TEST_F(VideoReaderTest, MetadataCacheWithSegmentsKeepsOneEntryPerVideo) {
  VideoTree tree;
  const std::string cache = tree.root() + "/meta.bin";
  const std::string list = write_list(tree.root(), "seg.txt", "a/webcam.avi 1 0 1\na/webcam.avi 2 1 2\na/webcam.avi 3 2 -\n");
  const auto spec = reader_spec("", {{"file_list", list}, {"file_list_format", "path label start end"},
                                     {"frames_per_clip", int64_t{4}}, {"metadata_cache", cache}, {"output", "count"}});
  {
    Pipeline p(spec, {.batch_size = 3, .num_threads = 2});
    EXPECT_EQ(counter(p, "video_probes"), 1);
  }
  std::string note;
  EXPECT_EQ(VideoMetadataCache::load(cache, &note)->size(), 1);
  Pipeline p(spec, {.batch_size = 3, .num_threads = 2});
  EXPECT_EQ(counter(p, "video_probes"), 0);
  EXPECT_EQ(counter(p, "video_metadata_cache_hits"), 1);
  int64_t clips = 0;
  for (const auto& out : p.epoch_batches()) clips += out.outputs[0].size();
  EXPECT_EQ(clips, 3);
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
