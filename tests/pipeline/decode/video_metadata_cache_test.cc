// The video metadata cache on corpus videos: its file round-trips every VideoInfo exactly and
// re-encodes to the same bytes; every truncation, every flipped byte, another version and
// another magic are refused with the right code; infos probe() could not make are refused;
// file stamps change with the bytes; load / save (missing, empty, corrupt, foreign, not a
// cache, unwritable) and several savers at once never leave a broken file.
#include "pipeline/decode/video_metadata_cache.h"

#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "media/file_system.h"
#include "pipeline/errors.h"
#include "tests/test_util.h"

namespace hdl {
namespace {
namespace fs = std::filesystem;

const char* const kVideos[] = {"office_h264_320x240.mp4", "webcam_mjpeg_160x120.avi", "puck_mpeg4asp_400x300.avi",
                               "tree_cinepak_320x240.avi"};

fs::path video(const std::string& name) { return testing::corpus_dir() / "video" / "original" / name; }

class VideoMetadataCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HDL_REQUIRE_CORPUS();
    if (!fs::exists(video(kVideos[0]))) GTEST_SKIP() << "the corpus has no video/ folder";
    dir_ = fs::path(HDL_BINARY_DIR) / "tmp" / ("vmeta_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    VideoDecoder decoder;
    for (const char* name : kVideos) {
      auto file = posix_file_system()->open(video(name).string());
      ASSERT_TRUE(file.is_ok());
      auto info = decoder.probe(**file);
      ASSERT_TRUE(info.is_ok()) << info.status().to_string();
      auto stamp = stamp_file(**file);
      ASSERT_TRUE(stamp.is_ok()) << stamp.status().to_string();
      entries_.push_back({std::string("videos/") + name, *stamp, *info});
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string encoded() const {
    std::vector<const VideoMetadataEntry*> p;
    for (const auto& e : entries_) p.push_back(&e);
    return encode_video_metadata(p);
  }
  static Result<std::vector<VideoMetadataEntry>> parse(const std::string& bytes) {
    return parse_video_metadata({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  }
  void write(const fs::path& p, const std::string& bytes) const {
    std::ofstream(p, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
  }

  fs::path dir_;
  std::vector<VideoMetadataEntry> entries_;
};

void expect_same(const VideoInfo& a, const VideoInfo& b) {
  EXPECT_EQ(a.container, b.container);
  EXPECT_EQ(a.codec, b.codec);
  EXPECT_EQ(a.pixel_format, b.pixel_format);
  EXPECT_EQ(a.stream_index, b.stream_index);
  EXPECT_EQ(a.width, b.width);
  EXPECT_EQ(a.height, b.height);
  EXPECT_EQ(a.rotation, b.rotation);
  EXPECT_EQ(a.time_base_num, b.time_base_num);
  EXPECT_EQ(a.time_base_den, b.time_base_den);
  EXPECT_EQ(a.pts, b.pts);
  EXPECT_EQ(a.keyframes, b.keyframes);
  EXPECT_EQ(a.sequential, b.sequential);
  EXPECT_EQ(a.last_frame_duration, b.last_frame_duration);
}

TEST_F(VideoMetadataCacheTest, FileRoundTripsEveryInfoAndReencodesToTheSameBytes) {
  const std::string bytes = encoded();
  auto parsed = parse(bytes);
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().to_string();
  ASSERT_EQ(parsed->size(), entries_.size());
  int64_t frames = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    EXPECT_EQ((*parsed)[i].key, entries_[i].key);
    EXPECT_EQ((*parsed)[i].stamp, entries_[i].stamp);
    expect_same((*parsed)[i].info, entries_[i].info);
    frames += entries_[i].info.num_frames();
  }
  std::vector<const VideoMetadataEntry*> p;
  for (const auto& e : *parsed) p.push_back(&e);
  EXPECT_EQ(encode_video_metadata(p), bytes);
  // Compact: timestamps as deltas, about 2 bytes a frame here (8 in memory).
  EXPECT_LT(bytes.size(), size_t(40 * 4 + 3 * frames)) << bytes.size() << " bytes for " << frames << " frames";
  EXPECT_TRUE(parse(encode_video_metadata({})).is_ok());
}

TEST_F(VideoMetadataCacheTest, EveryTruncationAndEveryFlippedByteIsRefused) {
  const std::string bytes = encoded();
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = parse(bytes.substr(0, n));
    ASSERT_FALSE(r.is_ok()) << n;
    ASSERT_EQ(r.status().code(), n < 8 ? StatusCode::kInvalidArgument : StatusCode::kInvalidData) << n;
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string b = bytes;
    b[i] = static_cast<char>(b[i] ^ 0x10);
    auto r = parse(b);
    ASSERT_FALSE(r.is_ok()) << "byte " << i;
    const StatusCode want = i < 8 ? StatusCode::kInvalidArgument : i < 12 ? StatusCode::kUnsupported : StatusCode::kInvalidData;
    ASSERT_EQ(r.status().code(), want) << "byte " << i << ": " << r.status().to_string();
  }
  std::string v2 = bytes;
  v2[8] = 2;
  EXPECT_EQ(parse(v2).status().message(), "format version 2, this build reads version 1");
  EXPECT_EQ(parse("not a cache at all").status().code(), StatusCode::kInvalidArgument);
}

// Encodes one entry with `info` (and a valid checksum) and parses it.
Result<std::vector<VideoMetadataEntry>> parse_one(VideoInfo info, std::string key = "a.mp4") {
  const VideoMetadataEntry e{std::move(key), {10, 20, 30}, std::move(info)};
  const VideoMetadataEntry* p = &e;
  const std::string bytes = encode_video_metadata({&p, 1});
  return parse_video_metadata({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
}

TEST_F(VideoMetadataCacheTest, InfosProbeCouldNotMakeAreRefused) {
  const VideoInfo good = entries_[0].info;
  ASSERT_TRUE(parse_one(good).is_ok());
  auto refused = [&](VideoInfo v, const std::string& why, std::string key = "a.mp4") {
    auto r = parse_one(std::move(v), std::move(key));
    EXPECT_FALSE(r.is_ok()) << why;
    if (!r.is_ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidData);
      EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message();
    }
  };
  VideoInfo v = good;
  v.pts.clear();
  v.keyframes.clear();
  refused(v, "frame count 0 out of range");
  v = good;
  std::swap(v.pts[1], v.pts[2]);
  refused(v, "timestamp step");
  v = good;
  v.pts[3] = v.pts[2];
  refused(v, "timestamp step 0 out of range");
  v = good;
  v.keyframes.push_back(v.num_frames());
  refused(v, "keyframe");
  v = good;
  v.keyframes = {2, 1};
  refused(v, "keyframe");
  v = good;
  v.keyframes.clear();
  refused(v, "keyframe count 0");
  v = good;
  v.rotation = 45;
  refused(v, "rotation 45 is not a multiple of 90");
  v = good;
  v.width = 0;
  refused(v, "width 0 out of range");
  v = good;
  v.time_base_den = 0;
  refused(v, "time base denominator 0");
  v = good;
  v.codec = std::string(300, 'x');
  refused(v, "codec name 300 out of range");
  refused(good, "empty key", "");
  v = good;
  v.pts = {INT64_MAX - 1, INT64_MAX};
  v.keyframes = {0};
  EXPECT_TRUE(parse_one(v).is_ok());  // the largest timestamps still fit
}

TEST_F(VideoMetadataCacheTest, StampsChangeWithTheBytesAndTheTime) {
  const std::vector<uint8_t> data = testing::read_file(video(kVideos[2]));  // puck: 359 KB
  ASSERT_GT(data.size(), size_t(3 * kStampBytes));
  auto stamp_of = [&](const std::vector<uint8_t>& bytes) {
    const fs::path p = dir_ / "v.mp4";
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    fs::last_write_time(p, fs::file_time_type(std::chrono::seconds(1700000000)));
    auto file = posix_file_system()->open(p.string());
    EXPECT_TRUE(file.is_ok());
    auto s = stamp_file(**file);
    EXPECT_TRUE(s.is_ok());
    return *s;
  };
  const FileStamp base = stamp_of(data);
  EXPECT_EQ(base.size, int64_t(data.size()));
  EXPECT_NE(base.modified_ns, 0);
  EXPECT_EQ(stamp_of(data), base);
  for (size_t at : {size_t(0), size_t(kStampBytes - 1), data.size() - size_t(kStampBytes), data.size() - 1}) {
    std::vector<uint8_t> d = data;
    d[at] ^= 1;
    EXPECT_NE(stamp_of(d).fingerprint, base.fingerprint) << at;
  }
  std::vector<uint8_t> middle = data;  // a byte no stamp reads: only a probe would see it
  middle[size_t(kStampBytes) + 10] ^= 1;
  EXPECT_EQ(stamp_of(middle).fingerprint, base.fingerprint);
  std::vector<uint8_t> longer = data;
  longer.push_back(0);
  EXPECT_NE(stamp_of(longer).size, base.size);
  // The same bytes touched later: another stamp.
  auto file = posix_file_system()->open((dir_ / "v.mp4").string());
  ASSERT_TRUE(file.is_ok());
  fs::last_write_time(dir_ / "v.mp4", fs::file_time_type(std::chrono::seconds(1700000100)));
  auto touched = posix_file_system()->open((dir_ / "v.mp4").string());
  EXPECT_NE((*touched)->modified_ns(), (*file)->modified_ns());
  // Tiny files are hashed whole.
  EXPECT_NE(stamp_of({1, 2, 3}).fingerprint, stamp_of({1, 2, 4}).fingerprint);
  EXPECT_EQ(stamp_of({}).size, 0);
}

TEST_F(VideoMetadataCacheTest, LoadAndSave) {
  const std::string path = (dir_ / "meta.bin").string();
  std::string note;
  auto cache = VideoMetadataCache::load(path, &note);  // missing: empty, no note
  EXPECT_EQ(cache->size(), 0);
  EXPECT_TRUE(note.empty());
  EXPECT_FALSE(cache->changed());
  for (const auto& e : entries_) cache->put(e.key, e.stamp, std::make_shared<const VideoInfo>(e.info));
  EXPECT_TRUE(cache->changed());
  ASSERT_TRUE(cache->save().is_ok());
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);  // no temporary left
  auto again = VideoMetadataCache::load(path, &note);
  EXPECT_TRUE(note.empty()) << note;
  EXPECT_EQ(again->size(), 4);
  EXPECT_FALSE(again->changed());
  // A hit needs the same stamp; anything else is a miss.
  auto hit = again->find(entries_[1].key, entries_[1].stamp);
  ASSERT_TRUE(hit);
  expect_same(*hit, entries_[1].info);
  FileStamp other = entries_[1].stamp;
  other.modified_ns += 1;
  EXPECT_FALSE(again->find(entries_[1].key, other));
  EXPECT_FALSE(again->find("videos/unknown.mp4", entries_[1].stamp));
  EXPECT_EQ(again->hits(), 1);
  EXPECT_EQ(again->misses(), 2);
  // get_or_probe: a hit probes nothing; a file whose stamp changed is probed and replaced.
  VideoDecoder decoder;
  auto file = posix_file_system()->open(video(kVideos[2]).string());
  bool probed = true;
  ASSERT_TRUE(again->get_or_probe(entries_[2].key, **file, decoder, &probed).is_ok());
  EXPECT_FALSE(probed);
  ASSERT_TRUE(again->get_or_probe(entries_[3].key, **file, decoder, &probed).is_ok());  // tree's key, puck's bytes
  EXPECT_TRUE(probed);
  EXPECT_TRUE(again->changed());
  VideoDecoder small({.max_frame_pixels = 100 * 100});  // an entry over this decoder's limit is probed: it refuses
  const int64_t hits = again->hits();
  auto refused = again->get_or_probe(entries_[2].key, **file, small, &probed);
  EXPECT_FALSE(refused.is_ok());  // the probe's error (the decoder cannot even size the frames)
  EXPECT_EQ(again->hits(), hits);
  // An empty file is an empty cache; a corrupt one or another version too, with a note.
  write(path, "");
  EXPECT_EQ(VideoMetadataCache::load(path, &note)->size(), 0);
  EXPECT_TRUE(note.empty());
  std::string bytes = encoded();
  write(path, bytes.substr(0, bytes.size() / 2));
  EXPECT_EQ(VideoMetadataCache::load(path, &note)->size(), 0);
  EXPECT_EQ(note, "corrupt (checksum mismatch (truncated or overwritten)); rebuilding it");
  write(path, "HDLV");
  note.clear();
  EXPECT_EQ(VideoMetadataCache::load(path, &note)->size(), 0);
  EXPECT_EQ(note, "corrupt (truncated); rebuilding it");
  bytes[8] = 7;
  write(path, bytes);
  EXPECT_EQ(VideoMetadataCache::load(path, &note)->size(), 0);
  EXPECT_EQ(note, "of another format (format version 7, this build reads version 1); rebuilding it");
  // A file that is not a cache is not overwritten.
  write(path, "videos/a.mp4 1\n");
  try {
    VideoMetadataCache::load(path, &note);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("is not a video metadata cache"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("refusing to overwrite it"), std::string::npos) << e.what();
  }
  EXPECT_THROW(VideoMetadataCache::load(dir_.string(), &note), ConfigError);  // a folder
  // A folder that does not exist: save fails with the reason, naming the file.
  VideoMetadataCache nowhere((dir_ / "no" / "such" / "meta.bin").string());
  const Status st = nowhere.save();
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("no/such/meta.bin"), std::string::npos) << st.message();
}

// Several savers of one file at once (DDP ranks sharing a cache) each replace it whole: it is
// a valid cache after every round, holding one saver's entries.
TEST_F(VideoMetadataCacheTest, ConcurrentSaversLeaveAValidFile) {
  const std::string path = (dir_ / "shared.bin").string();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 20; ++round) {
        VideoMetadataCache c(path);
        for (int k = 0; k <= t; ++k)
          c.put(entries_[k].key, entries_[k].stamp, std::make_shared<const VideoInfo>(entries_[k].info));
        EXPECT_TRUE(c.save().is_ok());
        std::string note;
        auto read = VideoMetadataCache::load(path, &note);
        EXPECT_TRUE(note.empty()) << note;
        EXPECT_GE(read->size(), 1);
      }
    });
  for (auto& th : threads) th.join();
  std::string note;
  EXPECT_GE(VideoMetadataCache::load(path, &note)->size(), 1);
  EXPECT_TRUE(note.empty());
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);  // no temporaries left
}

}  // namespace
}  // namespace hdl
