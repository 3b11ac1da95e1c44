// video_reader's group_clips on corpus clips: each video's clips adjacent and in time order,
// the same clips and pixels for 1 and 2 threads, each clip equal to a decode of its own, the
// decoder going on from one clip to the next (video_clips_continued), exact resume, and the
// contiguous sampler refusing the option.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "decoders/video_decoder.h"
#include "media/file_system.h"
#include "pipeline/errors.h"
#include "pipeline/pipeline.h"
#include "tests/test_util.h"

namespace hdl {
namespace {

namespace fs = std::filesystem;

fs::path clip(const std::string& name) { return testing::corpus_dir() / "video" / "original" / name; }

// root/a/ office (36 frames H.264), webcam (68 frames MJPEG); root/b/ puck (28 frames MPEG-4),
// tree (68 frames Cinepak).
class GroupTree {
 public:
  GroupTree() : root_(fs::temp_directory_path() / ("hdl_video_group_" + std::to_string(::getpid()))) {
    fs::remove_all(root_);
    fs::create_directories(root_ / "a");
    fs::create_directories(root_ / "b");
    fs::create_symlink(clip("office_h264_320x240.mp4"), root_ / "a" / "office.mp4");
    fs::create_symlink(clip("webcam_mjpeg_160x120.avi"), root_ / "a" / "webcam.avi");
    fs::create_symlink(clip("puck_mpeg4asp_400x300.avi"), root_ / "b" / "puck.avi");
    fs::create_symlink(clip("tree_cinepak_320x240.avi"), root_ / "b" / "tree.avi");
  }
  ~GroupTree() { fs::remove_all(root_); }
  std::string root() const { return root_.string(); }

 private:
  fs::path root_;
};

class VideoGroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HDL_REQUIRE_CORPUS();
    if (!fs::exists(clip("office_h264_320x240.mp4"))) GTEST_SKIP() << "the corpus has no video/ folder";
  }
};

PipelineSpec grouped_spec(const std::string& root, const std::string& sampler = "random") {
  PipelineSpec spec;
  auto r = spec.add("video_reader", {},
                    {{"file_root", root}, {"frames_per_clip", int64_t{6}}, {"step", int64_t{2}}, {"clips_per_video", int64_t{3}},
                     {"sampler", sampler}, {"shuffle", true}, {"group_clips", true}},
                    {}, "reader");
  spec.set_outputs({r[0], r[2], r[3]});
  return spec;
}

struct Delivered {
  int64_t video = 0;
  std::vector<int64_t> frames;
  std::vector<uint8_t> pixels;
  bool operator==(const Delivered&) const = default;
};

std::vector<Delivered> take(Pipeline& p, int64_t batches = -1) {
  std::vector<Delivered> got;
  for (int64_t b = 0; b != batches; ++b) {
    auto out = p.next();
    if (!out) break;
    for (int64_t i = 0; i < out->outputs[0].size(); ++i) {
      Delivered d;
      d.video = *out->outputs[2].sample(i).typed<int64_t>();
      const Tensor idx = out->outputs[1].sample(i);
      d.frames.assign(idx.typed<int64_t>(), idx.typed<int64_t>() + idx.num_elements());
      const Tensor px = out->outputs[0].sample(i);
      const auto* bytes = static_cast<const uint8_t*>(px.data());
      d.pixels.assign(bytes, bytes + px.num_bytes());
      got.push_back(std::move(d));
    }
  }
  return got;
}

int64_t counter(const Pipeline& p, const std::string& name) {
  for (const auto& op : p.stats().operators)
    for (const auto& [n, v] : op.counters)
      if (n == name) return v;
  return -1;
}

TEST_F(VideoGroupTest, EachVideosClipsAreAdjacentInTimeOrderOnOneDecoderForAnyThreadCount) {
  GroupTree tree;
  std::vector<Delivered> runs[2];
  for (int threads : {1, 2}) {
    // Batches of 2 with groups of 3: groups straddle batches too.
    Pipeline p(grouped_spec(tree.root()), {.batch_size = 2, .num_threads = threads, .seed = 13});
    ASSERT_EQ(p.num_samples(), 12);
    for (int epoch = 0; epoch < 2; ++epoch) {
      const std::vector<Delivered> got = take(p);  // to the end of the epoch
      ASSERT_EQ(got.size(), 12u);
      std::set<int64_t> videos;
      for (size_t g = 0; g < got.size(); g += 3) {
        videos.insert(got[g].video);
        for (size_t k = 1; k < 3; ++k) {
          EXPECT_EQ(got[g + k].video, got[g].video) << "epoch " << epoch << " slot " << g + k;
          EXPECT_LE(got[g + k - 1].frames[0], got[g + k].frames[0]) << "clips of a video in time order";
        }
      }
      EXPECT_EQ(videos.size(), 4u) << "every video once per epoch";
      runs[threads - 1].insert(runs[threads - 1].end(), got.begin(), got.end());
    }
    EXPECT_GT(counter(p, "video_clips_continued"), 0) << threads << " threads";
  }
  EXPECT_TRUE(runs[0] == runs[1]) << "the same clips and pixels for 1 and 2 threads";
  // Each clip equals a decode of its own (no held session), and the draws vary.
  Pipeline p(grouped_spec(tree.root()), {.batch_size = 2, .num_threads = 1, .seed = 13});
  std::set<std::vector<int64_t>> distinct;
  for (const Delivered& d : runs[0]) {
    distinct.insert(d.frames);
    auto file = posix_file_system()->open(p.dataset().path(d.video));
    ASSERT_TRUE(file.is_ok());
    VideoDecoder dec;
    auto info = dec.probe(**file);
    ASSERT_TRUE(info.is_ok());
    Tensor want = Tensor::empty({6, info->display_height(), info->display_width(), 3}, DType::kU8, Layout::kFHWC);
    ASSERT_TRUE(dec.decode_into(**file, *info, d.frames, want.view()).is_ok());
    ASSERT_EQ(want.num_bytes(), d.pixels.size());
    EXPECT_EQ(std::memcmp(want.data(), d.pixels.data(), d.pixels.size()), 0) << p.dataset().path(d.video);
  }
  EXPECT_GT(distinct.size(), 12u);
}

TEST_F(VideoGroupTest, ResumeAndUniformKeepTheGroups) {
  GroupTree tree;
  const PipelineOptions opts{.batch_size = 2, .num_threads = 2, .seed = 3};
  Pipeline original(grouped_spec(tree.root()), opts);
  take(original, 3);  // mid-group: slot 6 starts the third video
  const std::string saved = original.state().to_string();
  const auto expected = take(original);
  ASSERT_EQ(expected.size(), 6u);
  Pipeline resumed(grouped_spec(tree.root()), opts);
  resumed.load_state(PipelineState::parse(saved));
  EXPECT_TRUE(take(resumed) == expected);
  // Uniform: the starts floor(linspace(0, L - 11, 3)) of each video, together and ascending.
  Pipeline uniform(grouped_spec(tree.root(), "uniform"), opts);
  const auto got = take(uniform);
  ASSERT_EQ(got.size(), 12u);
  for (size_t g = 0; g < got.size(); g += 3) {
    const int64_t length = got[g].video == 0 ? 36 : got[g].video == 2 ? 28 : 68;
    for (int64_t k = 0; k < 3; ++k) {
      EXPECT_EQ(got[g + k].video, got[g].video);
      EXPECT_EQ(got[g + k].frames[0], (length - 11) * k / 2);
    }
  }
  PipelineSpec contiguous = grouped_spec(tree.root(), "contiguous");
  EXPECT_THROW(Pipeline(contiguous, opts), ConfigError);
}

}  // namespace
}  // namespace hdl
