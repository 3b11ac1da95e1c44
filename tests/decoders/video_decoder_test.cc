// decoders/video_decoder.cc against FFmpeg's own tools on the corpus clips (video/MANIFEST.tsv):
// frame counts against ffprobe's packet count, pixels against `ffmpeg -f rawvideo -pix_fmt
// rgb24` byte for byte, seeks against a full decode, and bad input as Status values.
#include "decoders/video_decoder.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <numeric>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "media/file_system.h"
#include "tests/test_util.h"

namespace hdl::testing {
namespace {

namespace fs = std::filesystem;

// Every clip of video/MANIFEST.tsv, so that each has its own test name (ManifestListsTheseClips
// keeps the two in step).
const char* const kClips[] = {
    "original/cockatoo_h264_444_1280x720.mp4",   "original/office_h264_320x240.mp4",
    "original/city_mpeg2_720x405.mpg",           "original/pedestrians_msmpeg4v3_768x576.avi",
    "original/tree_cinepak_320x240.avi",         "original/megamind_mpeg4asp_720x528.avi",
    "original/dog_phone_h264_1920x1080.mp4",     "original/ball_h264_720x576.mp4",
    "original/ball_vp9_in_avi_320x240.avi",      "original/puck_mpeg4asp_400x300.avi",
    "original/puck_theora_400x304.ogv",          "original/race1906_theora_214x160.ogv",
    "original/webcam_mjpeg_160x120.avi",         "derived/city_h264_720x404.mp4",
    "derived/city_h264_high10_720x404.mkv",      "derived/cockatoo_h264_420_1280x720.mp4",
    "derived/dog_h264_rotate90_remux_1920x1080.mp4", "derived/pedestrians_h264_768x576.mp4",
    "derived/pedestrians_h264_bframes_longgop.mkv",  "derived/pedestrians_hevc_768x576.mp4",
    "derived/pedestrians_mjpeg_768x576.avi",     "derived/pedestrians_vp9_768x576.webm",
};

constexpr const char* kRotated = "derived/dog_h264_rotate90_remux_1920x1080.mp4";

fs::path video_dir() { return corpus_dir() / "video"; }

#define HDL_REQUIRE_VIDEO_CORPUS()                                                           \
  do {                                                                                       \
    if (!fs::exists(video_dir() / "MANIFEST.tsv"))                                           \
      GTEST_SKIP() << "video corpus not found at " << video_dir()                            \
                   << " (run tests/corpus/make_corpus.sh build/corpus, or set HDL_CORPUS_DIR)"; \
  } while (0)

bool have_ffmpeg() {
  static const bool ok = std::system("ffmpeg -version >/dev/null 2>&1") == 0 &&
                         std::system("ffprobe -version >/dev/null 2>&1") == 0;
  return ok;
}

#define HDL_REQUIRE_FFMPEG()                                                                  \
  do {                                                                                        \
    if (!have_ffmpeg()) GTEST_SKIP() << "ffmpeg/ffprobe not on PATH: the CLI is the reference here"; \
  } while (0)

/// One row of video/MANIFEST.tsv.
struct ManifestClip {
  std::string codec, pix_fmt;
  int64_t width = 0, height = 0, frames = 0;
  double duration = 0;
};

std::map<std::string, ManifestClip> read_video_manifest() {
  std::map<std::string, ManifestClip> out;
  std::ifstream f(video_dir() / "MANIFEST.tsv");
  std::string line;
  std::getline(f, line);
  std::map<std::string, size_t> col;
  {
    std::stringstream ss(line);
    size_t i = 0;
    for (std::string c; std::getline(ss, c, '\t');) col[c] = i++;
  }
  while (std::getline(f, line)) {
    std::vector<std::string> c;
    std::stringstream ss(line);
    for (std::string v; std::getline(ss, v, '\t');) c.push_back(v);
    if (c.size() <= col["duration_s"]) continue;
    ManifestClip m;
    m.codec = c[col["codec"]];
    m.pix_fmt = c[col["pix_fmt"]];
    m.width = std::stoll(c[col["width"]]);
    m.height = std::stoll(c[col["height"]]);
    m.frames = std::stoll(c[col["frames"]]);
    m.duration = std::stod(c[col["duration_s"]]);
    out[c[col["file"]]] = m;
  }
  return out;
}

std::string quoted(const fs::path& p) {
  std::string q = "'";
  for (char ch : p.string()) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

/// What a shell command writes to stdout.
std::string capture(const std::string& cmd) {
  std::string out;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) return out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), f)) > 0;) out.append(buf, n);
  pclose(f);
  return out;
}

uint64_t fnv1a(const uint8_t* p, size_t n, uint64_t h = 14695981039346656037ull) {
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/// The pixels of an HWC uint8 view, packed.
std::vector<uint8_t> packed(const ConstTensorView& v) {
  std::vector<uint8_t> out;
  out.reserve(v.num_bytes());
  auto* base = static_cast<const uint8_t*>(v.data);
  for (int64_t y = 0; y < v.shape[0]; ++y)
    for (int64_t x = 0; x < v.shape[1]; ++x)
      for (int64_t c = 0; c < v.shape[2]; ++c) out.push_back(base[y * v.strides[0] + x * v.strides[1] + c * v.strides[2]]);
  return out;
}

struct Opened {
  std::unique_ptr<RandomAccessFile> file;
  VideoInfo info;
};

Opened open_clip(VideoDecoder& dec, const std::string& clip) {
  Opened o;
  auto f = posix_file_system()->open((video_dir() / clip).string());
  EXPECT_TRUE(f.is_ok()) << f.status().to_string();
  if (!f.is_ok()) return o;
  o.file = std::move(*f);
  auto info = dec.probe(*o.file);
  EXPECT_TRUE(info.is_ok()) << info.status().to_string();
  if (info.is_ok()) o.info = std::move(*info);
  return o;
}

std::vector<int64_t> all_frames(const VideoInfo& info) {
  std::vector<int64_t> v(size_t(info.num_frames()));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

/// A hash of each frame decode() hands out for `frames`, in order.
Result<std::vector<uint64_t>> frame_hashes(VideoDecoder& dec, const RandomAccessFile& file, const VideoInfo& info,
                                           std::span<const int64_t> frames, VideoDecodeReport* report = nullptr) {
  std::vector<uint64_t> out;
  Status s = dec.decode(file, info, frames, [&](int64_t k, const ConstTensorView& v) {
    if (k != int64_t(out.size())) return Status::internal("sink called out of order");
    out.push_back(fnv1a(static_cast<const uint8_t*>(v.data), v.num_bytes()));
    return Status::ok();
  }, report);
  if (!s.is_ok()) return s;
  return out;
}

std::string test_name(const ::testing::TestParamInfo<std::string>& p) {
  std::string n = p.param;
  for (char& c : n)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

class VideoClip : public ::testing::TestWithParam<std::string> {};
INSTANTIATE_TEST_SUITE_P(Corpus, VideoClip, ::testing::ValuesIn(std::vector<std::string>(std::begin(kClips), std::end(kClips))), test_name);

TEST(VideoDecoder, ManifestListsTheseClips) {
  HDL_REQUIRE_VIDEO_CORPUS();
  std::vector<std::string> listed, ours(std::begin(kClips), std::end(kClips));
  for (auto& [file, row] : read_video_manifest()) listed.push_back(file);
  std::sort(ours.begin(), ours.end());
  EXPECT_EQ(listed, ours) << "video/MANIFEST.tsv changed: update kClips";
}

// Frame count = MANIFEST's `frames` = ffprobe's packet count; frame size = the size of the
// CLI's first decoded frame; timestamps ascending; rotation as the CLI's autorotate applies it.
TEST_P(VideoClip, ProbeMatchesManifestAndFfprobe) {
  HDL_REQUIRE_VIDEO_CORPUS();
  const std::string clip = GetParam();
  const fs::path path = video_dir() / clip;
  auto manifest = read_video_manifest();
  ASSERT_TRUE(manifest.count(clip));
  const ManifestClip& m = manifest[clip];
  VideoDecoder dec;
  Opened o = open_clip(dec, clip);
  ASSERT_TRUE(o.file);
  const VideoInfo& info = o.info;
  EXPECT_EQ(info.num_frames(), m.frames);
  EXPECT_EQ(info.codec, m.codec);
  EXPECT_FALSE(info.container.empty());
  EXPECT_EQ(info.pixel_format, m.pix_fmt);
  // race1906's Theora picture is 214 columns at offset 5 of a 224-column frame; libavcodec's
  // aligned cropping keeps 218 of them (what ffmpeg's CLI outputs, and so do we).
  if (clip == "original/race1906_theora_214x160.ogv") {
    EXPECT_EQ(info.width, 218);
  } else {
    EXPECT_EQ(info.width, m.width);
  }
  EXPECT_EQ(info.height, m.height);
  ASSERT_FALSE(info.pts.empty());
  for (size_t i = 1; i < info.pts.size(); ++i) ASSERT_LT(info.pts[i - 1], info.pts[i]) << i;
  ASSERT_FALSE(info.keyframes.empty());
  for (size_t i = 0; i < info.keyframes.size(); ++i) {
    EXPECT_TRUE(info.keyframes[i] >= 0 && info.keyframes[i] < info.num_frames());
    if (i > 0) EXPECT_LT(info.keyframes[i - 1], info.keyframes[i]);
  }
  EXPECT_GT(info.average_fps(), 0);
  EXPECT_NEAR(info.duration(), m.duration, 0.1);
  EXPECT_DOUBLE_EQ(info.frame_time(0), 0);
  // The rotate90 remux's display matrix says 90 degrees counter-clockwise (ffprobe's
  // "rotation": 90), which ffmpeg's autorotate undoes with transpose=cclock: 270 clockwise.
  EXPECT_EQ(info.rotation, clip == kRotated ? 270 : 0);
  EXPECT_EQ(info.display_width(), clip == kRotated ? info.height : info.width);
  EXPECT_EQ(info.display_height(), clip == kRotated ? info.width : info.height);
  // Packed B-frames in AVI have no pts: those two are numbered in decode order.
  EXPECT_EQ(info.sequential, clip.find("mpeg4asp") != std::string::npos);

  // A memory file of the same bytes probes the same.
  const std::vector<uint8_t> bytes = read_file(path);
  auto mem = dec.probe(*memory_file(bytes));
  ASSERT_TRUE(mem.is_ok()) << mem.status().to_string();
  EXPECT_EQ(mem->pts, info.pts);
  EXPECT_EQ(mem->keyframes, info.keyframes);

  if (!have_ffmpeg()) GTEST_SKIP() << "ffmpeg/ffprobe not on PATH: counts checked against MANIFEST only";
  const std::string packets = capture("ffprobe -v error -select_streams v:0 -count_packets -show_entries "
                                      "stream=nb_read_packets -of csv=p=0 " + quoted(path));
  EXPECT_EQ(info.num_frames(), std::atoll(packets.c_str())) << packets;
  const std::string first = capture("ffprobe -v error -select_streams v:0 -read_intervals %+#1 -show_entries "
                                    "frame=width,height -of csv=p=0 " + quoted(path));
  int first_w = 0, first_h = 0;
  EXPECT_EQ(std::sscanf(first.c_str(), "%d,%d", &first_w, &first_h), 2) << first;
  EXPECT_EQ(first_w, info.width);
  EXPECT_EQ(first_h, info.height);
  const std::string rotation = capture("ffprobe -v error -select_streams v:0 -show_entries "
                                       "stream_side_data=rotation -of csv=p=0 " + quoted(path));
  EXPECT_EQ(info.rotation, (360 - std::atoi(rotation.c_str()) % 360) % 360) << rotation;
}

// Decodes every frame of `path` and compares it with the CLI's rgb24 output byte for byte, in
// number and in content (-fps_mode passthrough: no frame dropped or duplicated for timing).
void expect_all_frames_equal_cli(const fs::path& path) {
  VideoDecoder dec;
  auto f = posix_file_system()->open(path.string());
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  auto info = dec.probe(**f);
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  const std::string cmd = "ffmpeg -nostdin -v error -i " + quoted(path) +
                          " -map 0:v:0 -fps_mode passthrough -f rawvideo -pix_fmt rgb24 -";
  FILE* cli = popen(cmd.c_str(), "r");
  ASSERT_NE(cli, nullptr);
  const size_t frame_bytes = size_t(info->display_width() * info->display_height() * 3);
  std::vector<uint8_t> ref(frame_bytes);
  int64_t differing = 0, first_bad = -1;
  int max_diff = 0;
  VideoDecodeReport report;
  Status s = dec.decode(**f, *info, all_frames(*info), [&](int64_t k, const ConstTensorView& v) {
    if (v.num_bytes() != frame_bytes) return Status::internal("frame of " + v.shape.to_string());
    if (fread(ref.data(), 1, frame_bytes, cli) != frame_bytes)
      return Status::internal("the CLI has no frame " + std::to_string(k));
    auto* px = static_cast<const uint8_t*>(v.data);
    if (std::memcmp(px, ref.data(), frame_bytes) != 0) {
      ++differing;
      if (first_bad < 0) first_bad = k;
      for (size_t i = 0; i < frame_bytes; ++i) max_diff = std::max(max_diff, std::abs(int(px[i]) - int(ref[i])));
    }
    return Status::ok();
  }, &report);
  size_t extra = 0;
  for (size_t n; (n = fread(ref.data(), 1, ref.size(), cli)) > 0;) extra += n;
  EXPECT_EQ(pclose(cli), 0) << cmd;
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(extra, 0u) << "the CLI output " << extra / frame_bytes << " more frames";
  EXPECT_EQ(differing, 0) << "first differing frame " << first_bad << ", max difference " << max_diff;
  EXPECT_EQ(report.frames_decoded, info->num_frames());
  EXPECT_EQ(report.seeks, 0);
}

TEST_P(VideoClip, AllFramesEqualFfmpegCli) {
  HDL_REQUIRE_VIDEO_CORPUS();
  HDL_REQUIRE_FFMPEG();
  expect_all_frames_equal_cli(video_dir() / GetParam());
}

// Sparse and contiguous frame sets, decoded with seeks, equal the same frames of a full decode.
class VideoSeek : public ::testing::TestWithParam<std::string> {};
INSTANTIATE_TEST_SUITE_P(
    Corpus, VideoSeek,
    ::testing::Values("derived/pedestrians_h264_bframes_longgop.mkv", "derived/city_h264_720x404.mp4",
                      "derived/pedestrians_hevc_768x576.mp4", "derived/pedestrians_vp9_768x576.webm",
                      "original/pedestrians_msmpeg4v3_768x576.avi", "original/city_mpeg2_720x405.mpg",
                      "original/ball_vp9_in_avi_320x240.avi", "original/race1906_theora_214x160.ogv",
                      "original/puck_theora_400x304.ogv", "original/megamind_mpeg4asp_720x528.avi",
                      "original/tree_cinepak_320x240.avi", "original/webcam_mjpeg_160x120.avi"),
    test_name);

// Decodes sparse and contiguous frame sets of `path` (with seeks) and compares each frame with
// the same frame of a full decode.
void expect_subsets_equal_full_decode(const fs::path& path) {
  VideoDecoder dec;
  auto f = posix_file_system()->open(path.string());
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  auto probed = dec.probe(**f);
  ASSERT_TRUE(probed.is_ok()) << probed.status().to_string();
  const VideoInfo& info = *probed;
  const RandomAccessFile& file = **f;
  const int64_t n = info.num_frames();
  VideoDecodeReport full_report;
  auto full = frame_hashes(dec, file, info, all_frames(info), &full_report);
  ASSERT_TRUE(full.is_ok()) << full.status().to_string();
  EXPECT_EQ(full_report.seeks, 0);

  std::vector<std::vector<int64_t>> sets = {{5}, {}, {n - 1}, {3, 3, 4}, {0}, {1, n / 3, n / 3, 2 * n / 3, n - 1}, {}};
  for (int64_t i = 37; i <= 52 && i < n; i += 2) sets[1].push_back(i);
  for (int64_t i = 2; i < n; i += 7) sets.back().push_back(i);
  for (size_t j = 1; j < info.keyframes.size() && j <= 3; ++j) {
    const int64_t k = info.keyframes[j];
    sets.push_back({k});
    sets.push_back({k - 1, k, k + 1 < n ? k + 1 : k});
    sets.push_back({k + 1 < n ? k + 1 : k});
  }
  for (const auto& frames : sets) {
    if (frames.empty()) continue;
    std::string name;
    for (int64_t i : frames) name += std::to_string(i) + " ";
    SCOPED_TRACE("frames " + name);
    VideoDecodeReport report;
    auto got = frame_hashes(dec, file, info, frames, &report);
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    ASSERT_EQ(got->size(), frames.size());
    for (size_t k = 0; k < frames.size(); ++k) EXPECT_EQ((*got)[k], (*full)[size_t(frames[k])]) << "frame " << frames[k];
    // A seek skips work when the first frame's keyframe is well into the clip. At most a seek
    // per frame, plus the few retries of a landing in the wrong place.
    const auto after = std::upper_bound(info.keyframes.begin(), info.keyframes.end(), frames[0]);
    const int64_t key = after == info.keyframes.begin() ? 0 : *(after - 1);
    if (!info.sequential && key >= 8) {
      EXPECT_GE(report.seeks, 1);
      EXPECT_LT(report.frames_decoded, frames.back() + 1);
    }
    if (info.sequential) EXPECT_EQ(report.seeks, 0);
    EXPECT_LE(report.seeks, int64_t(frames.size()) + 3);
  }
}

TEST_P(VideoSeek, SubsetsEqualFullDecode) {
  HDL_REQUIRE_VIDEO_CORPUS();
  expect_subsets_equal_full_decode(video_dir() / GetParam());
}

// MPEG transport and program streams (no index: libavformat bisects the file on timestamps to
// seek, and pts may be missing from some packets), made by the CLI from corpus clips: a
// remux of H.264 with B-frames, MPEG-2 with B-frames in both. Same checks as the corpus clips.
TEST(VideoDecoder, MpegStreamsMadeByTheCli) {
  HDL_REQUIRE_VIDEO_CORPUS();
  HDL_REQUIRE_FFMPEG();
  const fs::path dir = fs::temp_directory_path() / ("hdl_video_test_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path city = video_dir() / "derived/city_h264_720x404.mp4";
  const fs::path pedestrians = video_dir() / "derived/pedestrians_h264_768x576.mp4";
  const std::vector<std::pair<std::string, std::string>> made = {
      {"city_h264_remux.ts", "-i " + quoted(city) + " -c copy"},
      {"pedestrians_mpeg2_bframes.mpg", "-i " + quoted(pedestrians) + " -frames:v 60 -c:v mpeg2video -bf 2 -g 12 -q:v 4"},
      {"pedestrians_mpeg2_bframes.ts", "-i " + quoted(pedestrians) + " -frames:v 60 -c:v mpeg2video -bf 2 -g 12 -q:v 4"},
  };
  for (const auto& [name, args] : made) {
    SCOPED_TRACE(name);
    const fs::path out = dir / name;
    ASSERT_EQ(std::system(("ffmpeg -nostdin -v error -y " + args + " " + quoted(out)).c_str()), 0);
    VideoDecoder dec;
    auto f = posix_file_system()->open(out.string());
    ASSERT_TRUE(f.is_ok());
    auto info = dec.probe(**f);
    ASSERT_TRUE(info.is_ok()) << info.status().to_string();
    const std::string packets = capture("ffprobe -v error -select_streams v:0 -count_packets -show_entries "
                                        "stream=nb_read_packets -of csv=p=0 " + quoted(out));
    EXPECT_EQ(info->num_frames(), std::atoll(packets.c_str()));
    EXPECT_FALSE(info->sequential);
    EXPECT_GT(info->keyframes.size(), 1u);
    expect_all_frames_equal_cli(out);
    expect_subsets_equal_full_decode(out);
  }
  fs::remove_all(dir);
}

// A hard-to-land seek pattern: jump back and forth between keyframes of a long clip with one
// decoder, so every call starts fresh.
TEST(VideoDecoder, DecoderIsReusableAcrossFilesAndCalls) {
  HDL_REQUIRE_VIDEO_CORPUS();
  VideoDecoder dec;
  Opened a = open_clip(dec, "derived/city_h264_720x404.mp4");
  Opened b = open_clip(dec, "original/race1906_theora_214x160.ogv");
  ASSERT_TRUE(a.file && b.file);
  const std::vector<int64_t> fa = {10, 150}, fb = {0, 200, 287};
  auto ra = frame_hashes(dec, *a.file, a.info, fa);
  auto rb = frame_hashes(dec, *b.file, b.info, fb);
  auto ra2 = frame_hashes(dec, *a.file, a.info, fa);
  ASSERT_TRUE(ra.is_ok() && rb.is_ok() && ra2.is_ok());
  EXPECT_EQ(*ra, *ra2);
  VideoDecoder fresh;
  auto rb2 = frame_hashes(fresh, *b.file, b.info, fb);
  ASSERT_TRUE(rb2.is_ok());
  EXPECT_EQ(*rb, *rb2);
}

// The frame buffers of a decoder's codecs outlive each video (detail/video_frame_pool.h): a
// second round over the same videos allocates none, and the reused (not zeroed) buffers give
// the pixels a fresh decoder gives.
TEST(VideoDecoder, FrameBuffersAreReusedAcrossVideosWithTheSamePixels) {
  HDL_REQUIRE_VIDEO_CORPUS();
  VideoDecoder dec;
  std::vector<Opened> videos;
  for (const char* clip : {"derived/pedestrians_hevc_768x576.mp4", "derived/city_h264_720x404.mp4",
                           "original/megamind_mpeg4asp_720x528.avi", "original/tree_cinepak_320x240.avi"}) {
    videos.push_back(open_clip(dec, clip));
    ASSERT_TRUE(videos.back().file) << clip;
  }
  const std::vector<int64_t> frames = {20, 22, 24, 26, 28, 30, 32, 34};
  for (int round = 0; round < 2; ++round) {
    int64_t allocated = 0;
    for (const Opened& v : videos) {
      VideoDecodeReport r;
      auto got = frame_hashes(dec, *v.file, v.info, frames, &r);
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      VideoDecoder fresh;
      auto want = frame_hashes(fresh, *v.file, v.info, frames);
      ASSERT_TRUE(want.is_ok());
      EXPECT_EQ(*got, *want) << v.info.codec << ", round " << round;
      allocated += r.frame_buffers_allocated;
    }
    if (round == 0) EXPECT_GT(allocated, 0);
    if (round == 1) EXPECT_EQ(allocated, 0) << "the second round should reuse the first round's buffers";
  }
}

// decode_into a [T, H, W, C] view whose rows are wider than the frame (slots of a batch):
// the same pixels as decode(), and nothing written outside the view.
TEST(VideoDecoder, DecodeIntoStridedSlotsMatchesDecode) {
  HDL_REQUIRE_VIDEO_CORPUS();
  // 768 columns (straight into the slot), 218 (through scratch rows), 160, and a rotation.
  for (const char* clip : {"derived/pedestrians_h264_768x576.mp4", "original/race1906_theora_214x160.ogv",
                           "original/webcam_mjpeg_160x120.avi", kRotated}) {
    SCOPED_TRACE(clip);
    for (ColorFormat color : {ColorFormat::kRGB, ColorFormat::kGray}) {
      VideoDecoderOptions opt;
      opt.color = color;
      VideoDecoder dec(opt);
      Opened o = open_clip(dec, clip);
      ASSERT_TRUE(o.file);
      const int64_t h = o.info.display_height(), w = o.info.display_width(), c = color_channels(color);
      const std::vector<int64_t> frames = {0, 7, 7, 20};
      std::vector<std::vector<uint8_t>> expect;
      Status s = dec.decode(*o.file, o.info, frames, [&](int64_t, const ConstTensorView& v) {
        expect.push_back(packed(v));
        return Status::ok();
      });
      ASSERT_TRUE(s.is_ok()) << s.to_string();
      for (int64_t pad : {int64_t(0), int64_t(13)}) {
        SCOPED_TRACE("pad " + std::to_string(pad));
        const int64_t row = (w + pad) * c, guard = 256;
        std::vector<uint8_t> buf(size_t(int64_t(frames.size()) * h * row + 2 * guard), 0xA5);
        TensorView out(buf.data() + guard, Shape{int64_t(frames.size()), h, w, c}, DType::kU8);
        out.strides = Shape{h * row, row, c, 1};
        s = dec.decode_into(*o.file, o.info, frames, out);
        ASSERT_TRUE(s.is_ok()) << s.to_string();
        for (size_t k = 0; k < frames.size(); ++k) {
          ConstTensorView slot(buf.data() + guard + int64_t(k) * h * row, Shape{h, w, c}, DType::kU8);
          slot.strides = Shape{row, c, 1};
          EXPECT_EQ(packed(slot), expect[k]) << "slot " << k;
        }
        size_t touched = 0;
        for (size_t i = 0; i < buf.size(); ++i) {
          const int64_t at = int64_t(i) - guard;
          const bool inside = at >= 0 && at < int64_t(frames.size()) * h * row && at % row < w * c;
          touched += !inside && buf[i] != 0xA5;
        }
        EXPECT_EQ(touched, 0u) << "bytes written outside the view";
      }
    }
  }
}

// BGR is RGB with the channels swapped (not libswscale's bgr24, which differs from its rgb24 by
// a level here and there for 10-bit input); gray is libswscale's (the CLI's -pix_fmt gray: the
// luma plane, range-expanded), within a few levels of BT.601 luma of the RGB pixels.
TEST(VideoDecoder, BgrAndGrayAgreeWithRgb) {
  HDL_REQUIRE_VIDEO_CORPUS();
  for (const char* clip : {"derived/city_h264_high10_720x404.mkv", "original/webcam_mjpeg_160x120.avi",
                           "original/tree_cinepak_320x240.avi", "original/dog_phone_h264_1920x1080.mp4", kRotated}) {
    SCOPED_TRACE(clip);
    std::map<ColorFormat, std::vector<std::vector<uint8_t>>> out;
    const std::vector<int64_t> frames = {0, 1, 2, 12};
    for (ColorFormat color : {ColorFormat::kRGB, ColorFormat::kBGR, ColorFormat::kGray}) {
      VideoDecoderOptions opt;
      opt.color = color;
      VideoDecoder dec(opt);
      Opened o = open_clip(dec, clip);
      ASSERT_TRUE(o.file);
      Status s = dec.decode(*o.file, o.info, frames, [&](int64_t, const ConstTensorView& v) {
        EXPECT_EQ(v.shape[2], color_channels(color));
        out[color].push_back(packed(v));
        return Status::ok();
      });
      ASSERT_TRUE(s.is_ok()) << s.to_string();
    }
    for (size_t k = 0; k < frames.size(); ++k) {
      const auto &rgb = out[ColorFormat::kRGB][k], &bgr = out[ColorFormat::kBGR][k], &gray = out[ColorFormat::kGray][k];
      ASSERT_EQ(rgb.size(), bgr.size());
      ASSERT_EQ(rgb.size(), gray.size() * 3);
      bool swapped = true;
      double luma_diff = 0;
      for (size_t p = 0; p < gray.size(); ++p) {
        swapped &= bgr[3 * p] == rgb[3 * p + 2] && bgr[3 * p + 1] == rgb[3 * p + 1] && bgr[3 * p + 2] == rgb[3 * p];
        const double y = 0.299 * rgb[3 * p] + 0.587 * rgb[3 * p + 1] + 0.114 * rgb[3 * p + 2];
        luma_diff += std::abs(y - gray[p]);
      }
      EXPECT_TRUE(swapped) << "frame " << frames[k];
      EXPECT_LT(luma_diff / double(gray.size()), 2.0) << "frame " << frames[k];
    }
    if (!have_ffmpeg()) continue;
    const std::string cli = capture("ffmpeg -nostdin -v error -i " + quoted(video_dir() / clip) +
                                    " -map 0:v:0 -fps_mode passthrough -frames:v 3 -f rawvideo -pix_fmt gray -");
    std::vector<uint8_t> ours;
    for (size_t k = 0; k < 3; ++k) ours.insert(ours.end(), out[ColorFormat::kGray][k].begin(), out[ColorFormat::kGray][k].end());
    EXPECT_TRUE(std::vector<uint8_t>(cli.begin(), cli.end()) == ours) << "gray differs from ffmpeg -pix_fmt gray";
  }
}

// The CLI's autorotate off: apply_rotation = false gives the stored orientation.
TEST(VideoDecoder, RotationCanBeLeftOut) {
  HDL_REQUIRE_VIDEO_CORPUS();
  VideoDecoderOptions opt;
  opt.apply_rotation = false;
  VideoDecoder plain(opt), rotated;
  Opened o = open_clip(plain, kRotated);
  ASSERT_TRUE(o.file);
  std::vector<uint8_t> a, b;
  Shape sa, sb;
  ASSERT_TRUE(plain.decode(*o.file, o.info, std::vector<int64_t>{3}, [&](int64_t, const ConstTensorView& v) {
    a = packed(v), sa = v.shape;
    return Status::ok();
  }).is_ok());
  ASSERT_TRUE(rotated.decode(*o.file, o.info, std::vector<int64_t>{3}, [&](int64_t, const ConstTensorView& v) {
    b = packed(v), sb = v.shape;
    return Status::ok();
  }).is_ok());
  ASSERT_EQ(sa, (Shape{1080, 1920, 3}));
  ASSERT_EQ(sb, (Shape{1920, 1080, 3}));
  // 270 clockwise: stored pixel (y, x) lands at (W - 1 - x, y).
  for (int64_t y : {0, 17, 1079})
    for (int64_t x : {0, 500, 1919})
      for (int c = 0; c < 3; ++c) ASSERT_EQ(a[size_t((y * 1920 + x) * 3 + c)], b[size_t(((1919 - x) * 1080 + y) * 3 + c)]);
}

// Frame threads inside one decoder, and two decoders on two threads, give the bytes of one.
TEST(VideoDecoder, ThreadsGiveTheSameBytes) {
  HDL_REQUIRE_VIDEO_CORPUS();
  const std::string a = "derived/pedestrians_h264_bframes_longgop.mkv", b = "original/city_mpeg2_720x405.mpg";
  VideoDecoder one;
  Opened oa = open_clip(one, a), ob = open_clip(one, b);
  ASSERT_TRUE(oa.file && ob.file);
  const std::vector<int64_t> fa = all_frames(oa.info), fb = {0, 50, 51, 52, 150, 189};
  auto ha = frame_hashes(one, *oa.file, oa.info, fa), hb = frame_hashes(one, *ob.file, ob.info, fb);
  ASSERT_TRUE(ha.is_ok() && hb.is_ok());
  Result<std::vector<uint64_t>> ta = Status::internal("not run"), tb = ta, tc = ta;
  std::thread t1([&] {
    VideoDecoder d;
    ta = frame_hashes(d, *oa.file, oa.info, fa);
    if (ta.is_ok()) tc = frame_hashes(d, *ob.file, ob.info, fb);
  });
  std::thread t2([&] {
    VideoDecoder d;
    tb = frame_hashes(d, *ob.file, ob.info, fb);
  });
  t1.join();
  t2.join();
  ASSERT_TRUE(ta.is_ok() && tb.is_ok() && tc.is_ok());
  EXPECT_EQ(*ta, *ha);
  EXPECT_EQ(*tb, *hb);
  EXPECT_EQ(*tc, *hb);
  for (int threads : {0, 3}) {
    VideoDecoderOptions opt;
    opt.threads = threads;
    VideoDecoder mt(opt);
    auto h = frame_hashes(mt, *oa.file, oa.info, fa);
    ASSERT_TRUE(h.is_ok()) << h.status().to_string();
    EXPECT_EQ(*h, *ha) << "threads " << threads;
    auto hs = frame_hashes(mt, *ob.file, ob.info, fb);
    ASSERT_TRUE(hs.is_ok()) << hs.status().to_string();
    EXPECT_EQ(*hs, *hb) << "threads " << threads;
  }
}

// A clip's unwanted non-reference frames (B-frames before and between its frames; any frame of
// an intra-only stream such as MJPEG) are not decoded with one decoder thread; the frames handed out are those of a decoder that decodes
// everything (two threads: no skipping).
TEST(VideoDecoder, UnwantedNonReferenceFramesAreSkippedWithTheSamePixels) {
  HDL_REQUIRE_VIDEO_CORPUS();
  for (const std::string clip : {"derived/pedestrians_h264_bframes_longgop.mkv", "derived/city_h264_720x404.mp4",
                                 "derived/pedestrians_hevc_768x576.mp4", "derived/pedestrians_mjpeg_768x576.avi"}) {
    VideoDecoder one;
    VideoDecoderOptions two_threads;
    two_threads.threads = 2;
    VideoDecoder all(two_threads);
    Opened o = open_clip(one, clip);
    ASSERT_TRUE(o.file);
    std::vector<int64_t> frames;  // 16 frames, step 2, from the middle
    for (int64_t t = 0; t < 16; ++t) frames.push_back(o.info.num_frames() / 2 - 16 + 2 * t);
    VideoDecodeReport skipping, full;
    auto a = frame_hashes(one, *o.file, o.info, frames, &skipping);
    auto b = frame_hashes(all, *o.file, o.info, frames, &full);
    ASSERT_TRUE(a.is_ok() && b.is_ok()) << clip << ": " << a.status().to_string() << " " << b.status().to_string();
    EXPECT_EQ(*a, *b) << clip;
    EXPECT_EQ(skipping.retries, 0) << clip;
    EXPECT_LT(skipping.frames_decoded, full.frames_decoded) << clip << ": no frame was skipped";
    EXPECT_GE(skipping.frames_decoded, 16) << clip;
  }
}

// hold_session(): a decoder that keeps a video open goes on from its last clip to a clip ahead
// (fewer frames decoded when the keyframes are far apart), starts afresh for a clip behind,
// and gives the frames a full decode gives, whatever the container. Each clip reads through a
// newly opened file, as the reader does.
TEST(VideoDecoder, HeldSessionGoesOnToLaterClipsWithTheSameFrames) {
  HDL_REQUIRE_VIDEO_CORPUS();
  for (const std::string clip : {"derived/pedestrians_h264_bframes_longgop.mkv", "derived/city_h264_720x404.mp4",
                                 "derived/pedestrians_hevc_768x576.mp4", "derived/pedestrians_vp9_768x576.webm",
                                 "derived/pedestrians_mjpeg_768x576.avi", "original/city_mpeg2_720x405.mpg",
                                 "original/megamind_mpeg4asp_720x528.avi"}) {
    SCOPED_TRACE(clip);
    VideoDecoder reference;
    Opened o = open_clip(reference, clip);
    ASSERT_TRUE(o.file);
    auto full = frame_hashes(reference, *o.file, o.info, all_frames(o.info));
    ASSERT_TRUE(full.is_ok()) << full.status().to_string();
    const auto info = std::make_shared<const VideoInfo>(o.info);
    const int64_t n = info->num_frames();
    // 8-frame clips 2 apart (span 15): two in order, one behind, one ahead again. The gaps
    // leave room for the packets read ahead of a clip's last frame (B-frame reordering).
    ASSERT_GE(n, 100);
    std::vector<int64_t> starts = {1, 40, 10, n - 15};
    VideoDecoder held, fresh;
    held.hold_session(info);
    int64_t held_decoded = 0, fresh_decoded = 0;
    for (size_t c = 0; c < starts.size(); ++c) {
      std::vector<int64_t> frames;
      for (int64_t t = 0; t < 8; ++t) frames.push_back(starts[c] + 2 * t);
      auto file = posix_file_system()->open((video_dir() / clip).string());
      ASSERT_TRUE(file.is_ok());
      VideoDecodeReport r, f;
      auto got = frame_hashes(held, **file, *info, frames, &r);
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      for (size_t k = 0; k < frames.size(); ++k) EXPECT_EQ((*got)[k], (*full)[size_t(frames[k])]) << "clip " << c << " frame " << frames[k];
      ASSERT_TRUE(frame_hashes(fresh, **file, *info, frames, &f).is_ok());
      EXPECT_FALSE(f.continued);
      if (c == 0 || c == 2) EXPECT_FALSE(r.continued) << "clip " << c;  // the first, and one behind
      if (clip.find(".mkv") != std::string::npos || clip.find(".mp4") != std::string::npos || clip.find(".webm") != std::string::npos)
        if (c == 1 || c == 3) EXPECT_TRUE(r.continued) << "clip " << c;
      held_decoded += r.frames_decoded;
      fresh_decoded += f.frames_decoded;
    }
    if (clip.find("longgop") != std::string::npos) EXPECT_LT(held_decoded, fresh_decoded);
    EXPECT_LE(held_decoded, fresh_decoded);
  }
}

TEST(VideoDecoder, HeldSessionKeepsUpcomingFramesSoOverlappingClipsTakeOnePass) {
  HDL_REQUIRE_VIDEO_CORPUS();
  for (const std::string clip : {"derived/pedestrians_h264_bframes_longgop.mkv", "derived/city_h264_720x404.mp4",
                                 "derived/pedestrians_hevc_768x576.mp4", "derived/pedestrians_vp9_768x576.webm",
                                 "derived/pedestrians_mjpeg_768x576.avi", "original/city_mpeg2_720x405.mpg",
                                 "original/megamind_mpeg4asp_720x528.avi"}) {
    SCOPED_TRACE(clip);
    VideoDecoder reference;
    Opened o = open_clip(reference, clip);
    ASSERT_TRUE(o.file);
    auto full = frame_hashes(reference, *o.file, o.info, all_frames(o.info));
    ASSERT_TRUE(full.is_ok()) << full.status().to_string();
    const auto info = std::make_shared<const VideoInfo>(o.info);
    // Three overlapping 8-frame clips 2 apart, in time order (a video's group of clips), then
    // a repeat of the first: each later clip of the group is told to the decoder beforehand.
    const std::vector<int64_t> starts = {30, 36, 37, 30};
    auto frames_at = [](int64_t start) {
      std::vector<int64_t> f;
      for (int64_t t = 0; t < 8; ++t) f.push_back(start + 2 * t);
      return f;
    };
    VideoDecoder held, fresh;
    int64_t held_decoded = 0, fresh_decoded = 0;
    for (size_t c = 0; c < starts.size(); ++c) {
      std::vector<int64_t> upcoming;
      for (size_t later = c + 1; later < 3; ++later)
        for (int64_t f : frames_at(starts[later])) upcoming.push_back(f);
      held.hold_session(info, upcoming);
      const std::vector<int64_t> frames = frames_at(starts[c]);
      auto file = posix_file_system()->open((video_dir() / clip).string());
      ASSERT_TRUE(file.is_ok());
      VideoDecodeReport r, f;
      auto got = frame_hashes(held, **file, *info, frames, &r);
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      for (size_t k = 0; k < frames.size(); ++k) EXPECT_EQ((*got)[k], (*full)[size_t(frames[k])]) << "clip " << c << " frame " << frames[k];
      ASSERT_TRUE(frame_hashes(fresh, **file, *info, frames, &f).is_ok());
      if (c == 0 || c == 3) EXPECT_FALSE(r.continued) << "clip " << c;  // the first, and one behind
      const bool goes_on = clip.find(".mkv") != std::string::npos || clip.find(".mp4") != std::string::npos ||
                           clip.find(".webm") != std::string::npos;  // as in the test above
      if (c < 3) {
        if ((c == 1 || c == 2) && goes_on) EXPECT_TRUE(r.continued) << "clip " << c;
        held_decoded += r.frames_decoded;
        fresh_decoded += f.frames_decoded;
      }
    }
    EXPECT_LE(held_decoded, fresh_decoded);
    if (clip.find(".mkv") != std::string::npos || clip.find(".mp4") != std::string::npos) EXPECT_LT(held_decoded, fresh_decoded);
  }
}

TEST(VideoDecoder, DecodeOnlyCountsFrames) {
  HDL_REQUIRE_VIDEO_CORPUS();
  VideoDecoder dec;
  Opened o = open_clip(dec, "derived/pedestrians_vp9_768x576.webm");
  ASSERT_TRUE(o.file);
  VideoDecodeReport report;
  ASSERT_TRUE(dec.decode_only(*o.file, o.info, all_frames(o.info), &report).is_ok());
  EXPECT_EQ(report.frames_decoded, o.info.num_frames());
  EXPECT_EQ(report.packets, o.info.num_frames());
}

// ---- Bad input: Status values with messages, never a crash or a hang. ----

// A RandomAccessFile that fails every read reaching past `limit` bytes.
class FailingFile final : public RandomAccessFile {
 public:
  FailingFile(std::span<const uint8_t> bytes, int64_t limit) : mem_(memory_file(bytes)), limit_(limit) {}
  int64_t size() const override { return mem_->size(); }
  Result<int64_t> read(int64_t offset, int64_t n, void* dst) const override {
    if (offset + n > limit_) return Status::io_error("Input/output error (injected)");
    return mem_->read(offset, n, dst);
  }

 private:
  std::unique_ptr<RandomAccessFile> mem_;
  int64_t limit_;
};

TEST(VideoDecoder, IoErrorsAreTheFilesOwn) {
  HDL_REQUIRE_VIDEO_CORPUS();
  const auto bytes = read_file(video_dir() / "derived/city_h264_720x404.mp4");
  VideoDecoder dec;
  for (int64_t limit : {int64_t(0), int64_t(100), int64_t(bytes.size()) / 2}) {
    auto info = dec.probe(FailingFile(bytes, limit));
    ASSERT_FALSE(info.is_ok()) << limit;
    EXPECT_EQ(info.status().code(), StatusCode::kIoError) << info.status().to_string();
    EXPECT_EQ(info.status().message(), "Input/output error (injected)");
  }
  auto info = dec.probe(*memory_file(bytes));
  ASSERT_TRUE(info.is_ok());
  Status s = dec.decode_only(FailingFile(bytes, int64_t(bytes.size()) / 2), *info, all_frames(*info));
  EXPECT_EQ(s.code(), StatusCode::kIoError) << s.to_string();
  EXPECT_EQ(s.message(), "Input/output error (injected)");
}

// Probes, then decodes every frame probe() found (the first few of them to pixels, every other
// one through decode(), whose sink must see each frame once and in order, even when a decode
// that skipped unwanted frames fails and is retried): all may fail, with a message.
Status probe_and_decode(std::span<const uint8_t> bytes, int64_t* frames = nullptr) {
  VideoDecoder dec;
  auto file = memory_file(bytes);
  auto info = dec.probe(*file);
  if (!info.is_ok()) return info.status();
  if (frames) *frames = info->num_frames();
  std::vector<int64_t> first = all_frames(*info);
  first.resize(std::min<size_t>(first.size(), 4));
  const Shape shape{int64_t(first.size()), info->display_height(), info->display_width(), 3};
  std::vector<uint8_t> pixels(size_t(shape.num_elements()));
  HDL_RETURN_IF_ERROR(dec.decode_into(*file, *info, first, TensorView(pixels.data(), shape, DType::kU8)));
  std::vector<int64_t> every_other;
  for (int64_t i = 0; i < info->num_frames(); i += 2) every_other.push_back(i);
  int64_t next = 0;
  Status s = dec.decode(*file, *info, every_other, [&](int64_t k, const ConstTensorView&) {
    EXPECT_EQ(k, next) << "sink called out of order or twice";
    next = k + 1;
    return Status::ok();
  });
  if (s.is_ok()) EXPECT_EQ(next, int64_t(every_other.size()));
  return dec.decode_only(*file, *info, all_frames(*info));
}

TEST(VideoDecoder, TruncatedAndCorruptFilesAreStatusErrors) {
  HDL_REQUIRE_VIDEO_CORPUS();
  for (const char* clip : {"derived/pedestrians_h264_768x576.mp4", "derived/pedestrians_h264_bframes_longgop.mkv",
                           "derived/pedestrians_mjpeg_768x576.avi",
                           "derived/pedestrians_vp9_768x576.webm", "derived/pedestrians_hevc_768x576.mp4",
                           "original/ball_vp9_in_avi_320x240.avi", "original/city_mpeg2_720x405.mpg",
                           "original/puck_theora_400x304.ogv", "original/megamind_mpeg4asp_720x528.avi"}) {
    SCOPED_TRACE(clip);
    const auto bytes = read_file(video_dir() / clip);
    VideoDecoder dec;
    auto info = dec.probe(*memory_file(bytes));
    ASSERT_TRUE(info.is_ok());
    // The first 1000 bytes: not a playable video, except that an MPEG-PS has no index to
    // contradict its one truncated packet, which decodes (concealed) as the CLI decodes it.
    int64_t frames = 0;
    Status s = probe_and_decode(std::span(bytes).first(1000), &frames);
    if (!s.is_ok()) EXPECT_FALSE(s.message().empty());
    EXPECT_TRUE(!s.is_ok() || (frames == 1 && std::string(clip).ends_with(".mpg"))) << s.to_string();
    // The first half: either probe() says so, or it finds fewer frames and they decode (or fail
    // with a message).
    frames = 0;
    s = probe_and_decode(std::span(bytes).first(bytes.size() / 2), &frames);
    if (!s.is_ok()) EXPECT_FALSE(s.message().empty());
    EXPECT_LE(frames, info->num_frames());
    // The whole file's frames read from the first half (the file shrank after probe()): the
    // first missing frame is named.
    s = dec.decode_only(*memory_file(std::span(bytes).first(bytes.size() / 2)), *info, all_frames(*info));
    ASSERT_FALSE(s.is_ok());
    EXPECT_EQ(s.code(), StatusCode::kInvalidData);
    // (An MP4 whose index is at its end no longer opens.)
    EXPECT_TRUE(s.message().find("truncated or corrupt") != std::string::npos ||
                s.message().find("decoder:") != std::string::npos ||
                s.message().find("cannot be opened") != std::string::npos) << s.to_string();
    // Garbage in the middle: decoders conceal what they can; anything else is a Status.
    std::vector<uint8_t> corrupt = bytes;
    uint32_t x = 12345;
    for (size_t i = corrupt.size() / 2; i < corrupt.size() / 2 + 4096 && i < corrupt.size(); ++i)
      corrupt[i] = uint8_t((x = x * 1103515245 + 12345) >> 16);
    s = probe_and_decode(corrupt);
    if (!s.is_ok()) EXPECT_FALSE(s.message().empty());
  }
}

TEST(VideoDecoder, NotAVideoIsInvalidData) {
  HDL_REQUIRE_VIDEO_CORPUS();
  VideoDecoder dec;
  fs::path jpeg;
  for (auto& e : fs::recursive_directory_iterator(corpus_dir() / "imagenet"))
    if (e.path().extension() == ".JPEG") {
      jpeg = e.path();
      break;
    }
  ASSERT_FALSE(jpeg.empty());
  const auto bytes = read_file(jpeg);
  auto info = dec.probe(*memory_file(bytes));
  ASSERT_FALSE(info.is_ok());
  EXPECT_EQ(info.status().code(), StatusCode::kInvalidData);
  EXPECT_NE(info.status().message().find("still image"), std::string::npos) << info.status().to_string();

  const std::vector<uint8_t> empty;
  info = dec.probe(*memory_file(empty));
  ASSERT_FALSE(info.is_ok());
  EXPECT_EQ(info.status().code(), StatusCode::kInvalidData) << info.status().to_string();

  const std::string text = "file\tsource\tsource_path\nthis is not a video\n";
  info = dec.probe(*memory_file(std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size())));
  ASSERT_FALSE(info.is_ok());
  EXPECT_FALSE(info.status().message().empty());
}

TEST(VideoDecoder, BadFrameListsAreInvalidArguments) {
  HDL_REQUIRE_VIDEO_CORPUS();
  VideoDecoder dec;
  Opened o = open_clip(dec, "original/office_h264_320x240.mp4");
  ASSERT_TRUE(o.file);
  auto sink = [](int64_t, const ConstTensorView&) { return Status::ok(); };
  Status s = dec.decode(*o.file, o.info, std::vector<int64_t>{0, 36}, sink);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "frame index 36 is out of range: the video has 36 frames");
  s = dec.decode(*o.file, o.info, std::vector<int64_t>{-1}, sink);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  s = dec.decode(*o.file, o.info, std::vector<int64_t>{5, 4}, sink);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "frame indices must be ascending: 4 after 5");
  s = dec.decode_only(*o.file, VideoInfo{}, std::vector<int64_t>{0});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  // A wrong output shape.
  std::vector<uint8_t> buf(2 * 240 * 320 * 3);
  s = dec.decode_into(*o.file, o.info, std::vector<int64_t>{1}, TensorView(buf.data(), Shape{2, 240, 320, 3}, DType::kU8));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  // A sink's error stops the decode and is returned.
  s = dec.decode(*o.file, o.info, std::vector<int64_t>{1, 2}, [](int64_t, const ConstTensorView&) {
    return Status::cancelled("stop");
  });
  EXPECT_EQ(s.code(), StatusCode::kCancelled);
  // No frames: nothing to do.
  EXPECT_TRUE(dec.decode(*o.file, o.info, std::vector<int64_t>{}, sink).is_ok());
}

TEST(VideoDecoder, MaxFramePixelsRefusesBigVideos) {
  HDL_REQUIRE_VIDEO_CORPUS();
  VideoDecoderOptions opt;
  opt.max_frame_pixels = 320 * 240 - 1;
  VideoDecoder dec(opt);
  auto f = posix_file_system()->open((video_dir() / "original/office_h264_320x240.mp4").string());
  ASSERT_TRUE(f.is_ok());
  auto info = dec.probe(**f);
  ASSERT_FALSE(info.is_ok());
  EXPECT_EQ(info.status().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace hdl::testing
