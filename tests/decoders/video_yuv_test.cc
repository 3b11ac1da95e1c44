// The device path's YUV -> RGB arithmetic (decoders/kernels/yuv.h), run by its host twin on the
// YUV frames libavcodec decodes from the corpus clips, laid out as NVDEC hands them over (NV12,
// P010, YUV444P), against the CPU path's RGB (VideoDecoder: libswscale with the ffmpeg CLI's
// settings). NVDEC's YUV equals libavcodec's, so the bound measured here is the device path's
// difference from the CPU path; the GPU test checks the kernel gives the twin's bytes.
#include <gtest/gtest.h>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/pixdesc.h>
}

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "decoders/kernels/yuv.h"
#include "decoders/video_decoder.h"
#include "media/file_system.h"
#include "tests/test_util.h"

namespace hdl::testing {
namespace {

namespace fs = std::filesystem;

// A decoded software frame rearranged as NVDEC's surfaces are (semi-planar chroma for 4:2:0,
// samples in the top bits of 16-bit words), plus the planar original.
struct Surfaces {
  std::vector<uint8_t> luma, chroma, u, v;
  kernels::YuvFrame nvdec;   // as NVDEC's surface
  kernels::YuvFrame planar;  // libavcodec's own planes
};

// Builds both layouts of `f` (yuv420p, yuvj420p, yuv420p10le or yuv444p); false for others.
bool surfaces(const AVFrame* f, Surfaces* s) {
  const int w = f->width, h = f->height;
  const int format = f->format;
  const bool ten = format == AV_PIX_FMT_YUV420P10LE;
  const bool s444 = format == AV_PIX_FMT_YUV444P;
  if (!(format == AV_PIX_FMT_YUV420P || format == AV_PIX_FMT_YUVJ420P || ten || s444)) return false;
  kernels::YuvFrame& p = s->planar;
  p.width = w, p.height = h;
  p.layout = s444 ? kernels::YuvLayout::kPlanar444 : kernels::YuvLayout::kPlanar420;
  p.bytes = ten ? 2 : 1;
  p.shift = ten ? 6 : 0;
  for (int i = 0; i < 3; ++i) {
    p.plane[i] = f->data[i];
    p.pitch[i] = f->linesize[i];
  }
  kernels::YuvFrame& n = s->nvdec;
  n = p;
  if (s444) return true;  // NVDEC's YUV444P is planar too
  const int bytes = ten ? 2 : 1, cw = (w + 1) / 2, ch = (h + 1) / 2;
  s->luma.resize(size_t(w) * h * bytes);
  s->chroma.resize(size_t(cw) * 2 * ch * bytes);
  auto put = [&](uint8_t* dst, const uint8_t* src) {
    if (!ten) return void(*dst = *src);
    uint16_t v;
    std::memcpy(&v, src, 2);
    v = uint16_t(v << 6);  // P010: the 10 bits on top
    std::memcpy(dst, &v, 2);
  };
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) put(&s->luma[(size_t(y) * w + x) * bytes], f->data[0] + y * f->linesize[0] + x * bytes);
  for (int y = 0; y < ch; ++y)
    for (int x = 0; x < cw; ++x)
      for (int c = 0; c < 2; ++c)
        put(&s->chroma[((size_t(y) * cw + x) * 2 + c) * bytes], f->data[1 + c] + y * f->linesize[1 + c] + x * bytes);
  n.layout = kernels::YuvLayout::kSemiPlanar420;
  n.shift = 0;
  n.plane[0] = s->luma.data(), n.pitch[0] = int64_t(w) * bytes;
  n.plane[1] = s->chroma.data(), n.pitch[1] = int64_t(cw) * 2 * bytes;
  n.plane[2] = nullptr, n.pitch[2] = 0;
  return true;
}

struct Diff {
  int64_t values = 0, differing = 0;
  double sum = 0;
  int max = 0;
  void add(const uint8_t* a, const uint8_t* b, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      const int d = std::abs(int(a[i]) - int(b[i]));
      sum += d;
      differing += d != 0;
      max = std::max(max, d);
    }
    values += int64_t(n);
  }
  double mean() const { return values ? sum / double(values) : 0; }
};

// Clips decoded as the formats NVDEC hands over (8-bit 4:2:0 in BT.601 and BT.709, limited and
// full range, odd and even sizes; 10-bit 4:2:0; 4:4:4), whose frames the test can match by
// timestamp (MPEG-PS and AVI with packed B-frames number theirs differently from libavcodec's
// output). The conversion depends on the format, not the codec.
const char* const kClips[] = {
    "derived/city_h264_720x404.mp4",          "derived/city_h264_high10_720x404.mkv",
    "original/cockatoo_h264_444_1280x720.mp4", "original/dog_phone_h264_1920x1080.mp4",
    "derived/pedestrians_hevc_768x576.mp4",   "derived/pedestrians_mjpeg_768x576.avi",
    "derived/pedestrians_vp9_768x576.webm",   "derived/pedestrians_h264_bframes_longgop.mkv",
    "original/office_h264_320x240.mp4",       "original/race1906_theora_214x160.ogv",
    "original/puck_theora_400x304.ogv",
};

constexpr int kFrames = 8;

class YuvTwin : public ::testing::TestWithParam<const char*> {};

TEST_P(YuvTwin, CloseToTheCpuPathAndTheSameForEitherLayout) {
  const fs::path path = corpus_dir() / "video" / GetParam();
  if (!fs::exists(path)) GTEST_SKIP() << path << " not found (run tests/corpus/make_corpus.sh build/corpus)";
  // The CPU path's frames 0..kFrames-1, unrotated.
  auto file = posix_file_system()->open(path.string());
  ASSERT_TRUE(file.is_ok()) << file.status().message();
  VideoDecoderOptions o;
  o.apply_rotation = false;
  VideoDecoder decoder(o);
  auto info = decoder.probe(**file);
  ASSERT_TRUE(info.is_ok()) << info.status().message();
  const int64_t n = std::min<int64_t>(kFrames, info->num_frames());
  std::vector<int64_t> frames(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) frames[size_t(i)] = i;
  Tensor cpu = Tensor::empty(Shape{n, info->height, info->width, 3}, DType::kU8, Layout::kFHWC);
  ASSERT_TRUE(decoder.decode_into(**file, *info, frames, cpu.view()).is_ok());
  o.color = ColorFormat::kGray;
  VideoDecoder gray_decoder(o);
  Tensor cpu_gray = Tensor::empty(Shape{n, info->height, info->width, 1}, DType::kU8, Layout::kFHWC);
  ASSERT_TRUE(gray_decoder.decode_into(**file, *info, frames, cpu_gray.view()).is_ok());

  // libavcodec's YUV of the same frames, identified by timestamp.
  AVFormatContext* fmt = nullptr;
  ASSERT_EQ(avformat_open_input(&fmt, path.c_str(), nullptr, nullptr), 0);
  std::unique_ptr<AVFormatContext, void (*)(AVFormatContext*)> fmt_guard(fmt, [](AVFormatContext* f) { avformat_close_input(&f); });
  ASSERT_GE(avformat_find_stream_info(fmt, nullptr), 0);
  AVStream* st = fmt->streams[info->stream_index];
  const AVCodec* codec = avcodec_find_decoder(st->codecpar->codec_id);
  AVCodecContext* ctx = avcodec_alloc_context3(codec);
  std::unique_ptr<AVCodecContext, void (*)(AVCodecContext*)> ctx_guard(ctx, [](AVCodecContext* c) { avcodec_free_context(&c); });
  ASSERT_GE(avcodec_parameters_to_context(ctx, st->codecpar), 0);
  ctx->thread_count = 1;
  ctx->pkt_timebase = st->time_base;
  ASSERT_EQ(avcodec_open2(ctx, codec, nullptr), 0);
  AVPacket* pkt = av_packet_alloc();
  AVFrame* f = av_frame_alloc();
  Diff diff, gray_diff;
  std::vector<bool> seen(static_cast<size_t>(n), false);
  int64_t compared = 0;
  bool unsupported_format = false;
  auto take = [&] {
    while (avcodec_receive_frame(ctx, f) == 0) {
      const int64_t ts = f->best_effort_timestamp;
      const auto it = std::lower_bound(info->pts.begin(), info->pts.end(), ts);
      const int64_t index = it != info->pts.end() && *it == ts ? it - info->pts.begin() : -1;
      Surfaces s;
      if (index >= 0 && index < n && !seen[size_t(index)]) {
        if (!surfaces(f, &s)) {
          unsupported_format = true;
        } else {
          seen[size_t(index)] = true;
          const int range = f->color_range;
          const bool full = range == AVCOL_RANGE_JPEG || (range == AVCOL_RANGE_UNSPECIFIED && f->format == AV_PIX_FMT_YUVJ420P);
          const kernels::YuvMatrix m = kernels::yuv_matrix(f->colorspace, full);
          Tensor a = Tensor::empty(Shape{info->height, info->width, 3}, DType::kU8, Layout::kHWC);
          Tensor b = Tensor::empty(Shape{info->height, info->width, 3}, DType::kU8, Layout::kHWC);
          EXPECT_TRUE(kernels::yuv_to_rgb(s.nvdec, m, 0, ColorFormat::kRGB, a.view()).is_ok());
          EXPECT_TRUE(kernels::yuv_to_rgb(s.planar, m, 0, ColorFormat::kRGB, b.view()).is_ok());
          EXPECT_EQ(std::memcmp(a.data(), b.data(), size_t(a.num_elements())), 0)
              << "frame " << index << ": the NVDEC layout and the planar one convert differently";
          const Tensor ref = cpu.slice(index);
          diff.add(static_cast<const uint8_t*>(a.data()), static_cast<const uint8_t*>(ref.data()), size_t(a.num_elements()));
          Tensor g = Tensor::empty(Shape{info->height, info->width, 1}, DType::kU8, Layout::kHWC);
          EXPECT_TRUE(kernels::yuv_to_rgb(s.nvdec, m, 0, ColorFormat::kGray, g.view()).is_ok());
          const Tensor gref = cpu_gray.slice(index);
          gray_diff.add(static_cast<const uint8_t*>(g.data()), static_cast<const uint8_t*>(gref.data()), size_t(g.num_elements()));
          ++compared;
        }
      }
      av_frame_unref(f);
    }
  };
  while (compared < n && !unsupported_format && av_read_frame(fmt, pkt) >= 0) {
    if (pkt->stream_index == info->stream_index) {
      avcodec_send_packet(ctx, pkt);
      take();
    }
    av_packet_unref(pkt);
  }
  avcodec_send_packet(ctx, nullptr);
  take();
  av_packet_free(&pkt);
  av_frame_free(&f);
  if (unsupported_format) GTEST_SKIP() << GetParam() << ": decoded as " << info->pixel_format << ", not an NVDEC format";
  ASSERT_GT(compared, 0) << "no frame of " << GetParam() << " matched a timestamp";
  std::printf("[ yuv twin ] %-44s %-12s frames %2lld  mean |diff| %.3f  max %d  differing %.1f%%  gray: mean %.3f max %d\n",
              GetParam(), info->pixel_format.c_str(), static_cast<long long>(compared), diff.mean(), diff.max,
              100.0 * double(diff.differing) / double(diff.values), gray_diff.mean(), gray_diff.max);
  // docs/VIDEO.md ("NVDEC"): 8-bit 4:2:0 is libswscale's SSSE3 arithmetic, the same bytes; the
  // other formats are bounded by what was measured over these clips.
  // Gray (the luma, range-expanded) is libswscale's exactly for 8-bit samples (measured: 10-bit
  // within 1 level).
  if (info->pixel_format.find("10") == std::string::npos) {
    EXPECT_EQ(gray_diff.differing, 0) << GetParam() << ": gray max |diff| " << gray_diff.max;
  } else {
    EXPECT_LE(gray_diff.max, 1) << GetParam();
  }
  const bool exact = info->pixel_format == "yuv420p" || info->pixel_format == "yuvj420p";
  if (exact) {
    EXPECT_EQ(diff.differing, 0) << GetParam() << ": max |diff| " << diff.max;
  } else {
    EXPECT_LE(diff.mean(), kernels::kYuvTwinMeanBound) << GetParam();
    EXPECT_LE(diff.max, kernels::kYuvTwinMaxBound) << GetParam();
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, YuvTwin, ::testing::ValuesIn(kClips), [](const auto& info) {
  std::string name = info.param;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
});

// Rotations and the other colour formats give the same pixels as rotating and converting the
// RGB result: checked on a small synthetic frame.
TEST(YuvTwin, RotationAndColorFormatsFollowTheRgbFrame) {
  const int w = 6, h = 4;
  std::vector<uint8_t> y(size_t(w) * h), uv(size_t(w) * (h / 2));
  for (size_t i = 0; i < y.size(); ++i) y[i] = uint8_t(16 + 13 * i % 220);
  for (size_t i = 0; i < uv.size(); ++i) uv[i] = uint8_t(40 + 29 * i % 180);
  kernels::YuvFrame f;
  f.plane[0] = y.data(), f.pitch[0] = w;
  f.plane[1] = uv.data(), f.pitch[1] = w;
  f.width = w, f.height = h;
  const kernels::YuvMatrix m = kernels::yuv_matrix(1, false);
  Tensor rgb = Tensor::empty(Shape{h, w, 3}, DType::kU8, Layout::kHWC);
  ASSERT_TRUE(kernels::yuv_to_rgb(f, m, 0, ColorFormat::kRGB, rgb.view()).is_ok());
  auto at = [&](const Tensor& t, int64_t r, int64_t c, int64_t k) {
    return static_cast<const uint8_t*>(t.data())[(r * t.shape()[1] + c) * t.shape()[2] + k];
  };
  for (int rotation : {90, 180, 270}) {
    const bool quarter = rotation % 180 != 0;
    Tensor out = Tensor::empty(Shape{quarter ? w : h, quarter ? h : w, 3}, DType::kU8, Layout::kHWC);
    ASSERT_TRUE(kernels::yuv_to_rgb(f, m, rotation, ColorFormat::kRGB, out.view()).is_ok());
    for (int64_t r = 0; r < out.shape()[0]; ++r)
      for (int64_t c = 0; c < out.shape()[1]; ++c) {
        // Clockwise: 90 takes column r of the frame bottom-up (as ffmpeg's transpose=clock).
        const int64_t sr = rotation == 90 ? h - 1 - c : rotation == 180 ? h - 1 - r : c;
        const int64_t sc = rotation == 90 ? r : rotation == 180 ? w - 1 - c : w - 1 - r;
        for (int k = 0; k < 3; ++k) ASSERT_EQ(at(out, r, c, k), at(rgb, sr, sc, k)) << rotation;
      }
  }
  Tensor bgr = Tensor::empty(Shape{h, w, 3}, DType::kU8, Layout::kHWC);
  ASSERT_TRUE(kernels::yuv_to_rgb(f, m, 0, ColorFormat::kBGR, bgr.view()).is_ok());
  for (int64_t r = 0; r < h; ++r)
    for (int64_t c = 0; c < w; ++c)
      for (int k = 0; k < 3; ++k) ASSERT_EQ(at(bgr, r, c, k), at(rgb, r, c, 2 - k));
  // Gray is the range-expanded luma.
  Tensor gray = Tensor::empty(Shape{h, w, 1}, DType::kU8, Layout::kHWC);
  ASSERT_TRUE(kernels::yuv_to_rgb(f, m, 0, ColorFormat::kGray, gray.view()).is_ok());
  for (int64_t i = 0; i < int64_t(y.size()); ++i) {
    const float want = std::clamp(std::floor(float(y[size_t(i)] - 16) * float(255.0 / 219.0) + 0.5f), 0.0f, 255.0f);
    ASSERT_EQ(static_cast<const uint8_t*>(gray.data())[i], uint8_t(want)) << i;
  }
  // Refusals name the problem.
  Tensor wrong = Tensor::empty(Shape{h, w + 1, 3}, DType::kU8, Layout::kHWC);
  Status s = kernels::yuv_to_rgb(f, m, 0, ColorFormat::kRGB, wrong.view());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("[4, 6, 3]"), std::string::npos) << s.message();
  EXPECT_EQ(kernels::yuv_to_rgb(f, m, 45, ColorFormat::kRGB, rgb.view()).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hdl::testing
