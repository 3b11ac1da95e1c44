// A tar member as a file of its own (shard_member_file.h): windows read exactly their bytes, and
// video_reader over "<shard>.tar/<member>" paths (corpus clips stored in a shard made by GNU
// tar) gives the clips, pixel for pixel, that it gives over the same files on disk.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "media/file_system.h"
#include "pipeline/dataset.h"
#include "pipeline/pipeline.h"
#include "pipeline/readers/tar/shard_member_file.h"
#include "tests/pipeline/readers/tar_test_util.h"
#include "tests/test_util.h"

namespace hdl {
namespace {

using testing::TarDir;

TEST(ShardMemberFileTest, WindowReadsOnlyItsBytes) {
  TarDir dir("member_window");
  dir.write("f.bin", "0123456789abcdef");
  auto file = posix_file_system()->open(dir.path("f.bin").string());
  ASSERT_TRUE(file.is_ok());
  auto w = file_window(std::shared_ptr<const RandomAccessFile>(std::move(*file)), 4, 6);
  EXPECT_EQ(w->size(), 6);
  char buf[16] = {};
  auto n = w->read(2, 10, buf);
  ASSERT_TRUE(n.is_ok());
  EXPECT_EQ(std::string(buf, size_t(*n)), "6789");
  EXPECT_EQ(*w->read(6, 4, buf), 0);
}

// Which paths take the member route: only those under a regular file named *.tar; a folder
// named x.tar holds ordinary files; a path under no file keeps its own error.
TEST(ShardMemberFileTest, OnlyPathsUnderARegularTarFileAreMembers) {
  TarDir dir("member_route");
  dir.write("in/a.txt", "alpha");
  dir.write("in/b.txt", "bravo!");
  dir.write("folder.tar/real.txt", "a real file under a folder named folder.tar");
  dir.write("notatar.tar", std::string(1024, 'z'));
  ASSERT_TRUE(dir.sh("tar --format=gnu -C in -cf s.tar a.txt b.txt"));
  ShardMemberFileSystem fs(posix_file_system(), {.policy = IndexCachePolicy::kNone});
  auto text = [&](const std::string& rel) -> std::string {
    auto f = fs.open(dir.path(rel).string());
    if (!f.is_ok()) return "error: " + f.status().message();
    std::string s(size_t((*f)->size()), '\0');
    EXPECT_TRUE(read_exactly(**f, 0, (*f)->size(), s.data()).is_ok());
    return s;
  };
  EXPECT_EQ(text("in/a.txt"), "alpha");  // no ".tar/": the inner file system's
  EXPECT_TRUE(fs.counters().empty());
  EXPECT_EQ(text("folder.tar/real.txt"), "a real file under a folder named folder.tar");
  EXPECT_EQ(text("s.tar/b.txt"), "bravo!");  // indexed now
  EXPECT_EQ(text("s.tar/a.txt"), "alpha");   // from the kept index
  EXPECT_EQ(fs.counters(), (std::vector<std::pair<std::string, int64_t>>{{"shard_member_opens", 2}}));
  EXPECT_NE(text("s.tar/c.txt").find("tar shard \"" + dir.path("s.tar").string() + "\" has no member \"c.txt\""),
            std::string::npos);
  EXPECT_EQ(text("missing.tar/a.txt"), "error: No such file or directory");  // no shard: the path's error
  EXPECT_EQ(text("folder.tar/missing.txt"), "error: No such file or directory");
  const std::string bad = text("notatar.tar/a.txt");  // a file that is no tar: the index's error, naming it
  EXPECT_NE(bad.find("notatar.tar"), std::string::npos) << bad;
}

TEST(ShardMemberFileTest, VideosInAShardGiveTheClipsOfTheFilesOnDisk) {
  HDL_REQUIRE_CORPUS();
  const auto original = hdl::testing::corpus_dir() / "video" / "original";
  const std::vector<std::string> names = {"office_h264_320x240.mp4", "webcam_mjpeg_160x120.avi", "puck_mpeg4asp_400x300.avi"};
  if (!std::filesystem::exists(original / names[0])) GTEST_SKIP() << "the corpus has no video/ folder";
  TarDir dir("member_video");
  std::string members;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string key = "v" + std::to_string(i);
    std::filesystem::copy_file(original / names[i], dir.path(key + names[i].substr(names[i].rfind('.'))));
    dir.write(key + ".cls", std::to_string(i));
    members += " " + key + ".cls " + key + names[i].substr(names[i].rfind('.'));
  }
  ASSERT_TRUE(dir.sh("tar --format=gnu -cf videos.tar" + members));
  std::vector<std::string> on_disk, in_shard;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string member = "v" + std::to_string(i) + names[i].substr(names[i].rfind('.'));
    on_disk.push_back(dir.path(member).string());
    in_shard.push_back(dir.path("videos.tar").string() + "/" + member);
  }
  auto clips = [&](const std::vector<std::string>& paths, std::shared_ptr<FileSystem> fs) {
    PipelineSpec spec;
    auto r = spec.add("video_reader", {}, {{"sampler", std::string("contiguous")}, {"frames_per_clip", int64_t{8}},
                                           {"clip_stride", int64_t{10}}}, {}, "reader");
    spec.set_outputs({r[0], r[2]});
    spec.nodes()[0].samples = std::make_shared<const Dataset>(Dataset::from_samples(paths, {0, 1, 2}));
    PipelineOptions o{.batch_size = 3, .num_threads = 2};
    o.file_system = std::move(fs);
    Pipeline pipe(spec, o);
    std::vector<std::vector<uint8_t>> out;
    for (const auto& b : pipe.epoch_batches())
      for (int64_t i = 0; i < b.outputs[0].size(); ++i) {
        const Tensor t = b.outputs[0].sample(i);
        const auto* p = static_cast<const uint8_t*>(t.data());
        out.emplace_back(p, p + t.num_bytes());
      }
    return out;
  };
  const auto want = clips(on_disk, posix_file_system());
  const auto got = clips(in_shard, std::make_shared<ShardMemberFileSystem>(posix_file_system()));
  ASSERT_EQ(want.size(), 13u);  // 3 + 7 + 3 clips
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(got[i] == want[i]) << "clip " << i;
  // The pipeline's default file system (no PipelineOptions::file_system) reads members too.
  const auto by_default = clips(in_shard, nullptr);
  ASSERT_EQ(by_default.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(by_default[i] == want[i]) << "clip " << i;
  // A member the shard does not have is named.
  ShardMemberFileSystem fs(posix_file_system());
  auto missing = fs.open(dir.path("videos.tar").string() + "/nope.mp4");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("no member \"nope.mp4\""), std::string::npos) << missing.status().message();
}

}  // namespace
}  // namespace hdl
