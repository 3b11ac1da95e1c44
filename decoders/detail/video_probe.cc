#include "decoders/detail/video_probe.h"

extern "C" {
#include <libavutil/display.h>
#include <libavutil/pixdesc.h>
}

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "decoders/detail/video_io.h"

namespace hdl {
namespace detail::video {
namespace {

// The clockwise rotation the ffmpeg CLI's autorotate applies for a display matrix (fftools'
// get_rotation: theta = -av_display_rotation_get, in [0, 360)); 0 for none or for angles that
// are not multiples of 90 degrees (the CLI would insert a general `rotate` filter).
int rotation_of(const AVStream* st) {
  size_t size = 0;
  const uint8_t* m = av_stream_get_side_data(st, AV_PKT_DATA_DISPLAYMATRIX, &size);
  if (!m || size < 9 * sizeof(int32_t)) return 0;
  int32_t matrix[9];
  std::memcpy(matrix, m, sizeof(matrix));
  double theta = -av_display_rotation_get(matrix);
  if (std::isnan(theta)) return 0;
  theta -= 360 * std::floor(theta / 360 + 0.9 / 360);
  for (int r : {90, 180, 270})
    if (std::fabs(theta - r) < 1.0) return r;
  return 0;
}

struct PacketTimes {
  int64_t pts, dts, duration;
  bool key;
};

// Frame timestamps and keyframes from the packets in decode order (VideoInfo's contract).
void number_frames(const std::vector<PacketTimes>& packets, VideoInfo* info) {
  const size_t n = packets.size();
  std::vector<int64_t> pts;
  pts.reserve(n);
  for (const PacketTimes& p : packets)
    if (p.pts != AV_NOPTS_VALUE) pts.push_back(p.pts);
  std::sort(pts.begin(), pts.end());
  info->sequential = pts.size() != n || std::adjacent_find(pts.begin(), pts.end()) != pts.end();
  info->keyframes.clear();
  int64_t last_duration = 0;
  if (!info->sequential) {
    // Frame i is the i-th smallest presentation timestamp.
    for (const PacketTimes& p : packets) {
      if (p.key) info->keyframes.push_back(std::lower_bound(pts.begin(), pts.end(), p.pts) - pts.begin());
      if (p.pts == pts.back()) last_duration = p.duration;
    }
    std::sort(info->keyframes.begin(), info->keyframes.end());
  } else {
    // Decode order. Times: the decode timestamps if they all exist and increase (an AVI with
    // B-frames has dts but not pts), else made up from the packet durations.
    bool dts_ok = true;
    for (size_t i = 0; i < n; ++i)
      dts_ok &= packets[i].dts != AV_NOPTS_VALUE && (i == 0 || packets[i].dts > packets[i - 1].dts);
    pts.assign(n, 0);
    for (size_t i = 0; i < n; ++i) {
      pts[i] = dts_ok ? packets[i].dts : i == 0 ? 0 : pts[i - 1] + std::max<int64_t>(1, packets[i - 1].duration);
      if (packets[i].key) info->keyframes.push_back(int64_t(i));
    }
    last_duration = packets.back().duration;
  }
  if (info->keyframes.empty()) info->keyframes.push_back(0);  // the start is where every decode can begin
  info->pts = std::move(pts);
  if (last_duration <= 0 && n >= 2) last_duration = (info->pts.back() - info->pts.front()) / int64_t(n - 1);
  info->last_frame_duration = std::max<int64_t>(0, last_duration);
}

// probe()'s look at the first decoded frame, for its size and pixel format (the ffmpeg CLI
// sizes its output by the first frame). Best effort: a decoder that fails leaves the header's.
class FirstFrame {
 public:
  FirstFrame(const AVStream* st, int64_t max_pixels) {
    const AVCodec* codec = avcodec_find_decoder(st->codecpar->codec_id);
    ctx_ = codec ? avcodec_alloc_context3(codec) : nullptr;
    if (!ctx_) return;
    ctx_->thread_count = 1;
    ctx_->max_pixels = max_pixels;
    ctx_->log_level_offset = 100;
    ctx_->pkt_timebase = st->time_base;
    if (avcodec_parameters_to_context(ctx_, st->codecpar) < 0 || avcodec_open2(ctx_, codec, nullptr) < 0)
      avcodec_free_context(&ctx_);
  }
  ~FirstFrame() { avcodec_free_context(&ctx_); }
  FirstFrame(const FirstFrame&) = delete;
  FirstFrame& operator=(const FirstFrame&) = delete;

  /// Decodes `pkt` unless a frame came out already or too many packets gave none.
  void send(const AVPacket* pkt, AVFrame* frame) {
    if (!ctx_ || done_ || ++packets_ > 64) return;
    if (avcodec_send_packet(ctx_, pkt) < 0) return;
    if (avcodec_receive_frame(ctx_, frame) < 0) return;
    if (frame->width > 0 && frame->height > 0) {
      done_ = true;
      width_ = frame->width, height_ = frame->height, format_ = frame->format;
    }
    av_frame_unref(frame);
    avcodec_free_context(&ctx_);  // done with decoding
  }
  bool done() const { return done_; }
  int width() const { return width_; }
  int height() const { return height_; }
  int format() const { return format_; }

 private:
  AVCodecContext* ctx_ = nullptr;
  bool done_ = false;
  int packets_ = 0;
  int width_ = 0, height_ = 0, format_ = -1;
};

}  // namespace

Result<VideoInfo> probe_video(const RandomAccessFile& file, int64_t max_frame_pixels, AVPacket* packet, AVFrame* frame) {
  QuietLog quiet;
  Input in;
  HDL_RETURN_IF_ERROR(in.open(file, nullptr, "not a video file"));
  AVFormatContext* fmt = in.fmt();
  HDL_RETURN_IF_ERROR(find_stream_info(in, max_frame_pixels));
  const std::string demuxer = fmt->iformat->name;
  if (demuxer == "image2" || demuxer == "image2pipe" || demuxer.ends_with("_pipe"))
    return Status::invalid_data("not a video: libavformat reads it as a still image (" + demuxer + ")");
  const int index = first_video_stream(fmt);
  if (index < 0)
    return Status::invalid_data("no video stream (" + std::to_string(fmt->nb_streams) + " other streams in " +
                                fmt->iformat->name + ")");
  const AVStream* st = fmt->streams[index];
  const AVCodecParameters* par = st->codecpar;
  VideoInfo info;
  info.container = fmt->iformat->name;
  info.codec = avcodec_get_name(par->codec_id);
  if (par->codec_id == AV_CODEC_ID_NONE) return Status::unsupported("unknown video codec in " + info.container);
  if (!avcodec_find_decoder(par->codec_id))
    return Status::unsupported("no decoder for video codec " + info.codec + " in this FFmpeg build");
  const char* pix = av_get_pix_fmt_name(AVPixelFormat(par->format));
  info.pixel_format = pix ? pix : "";
  info.stream_index = index;
  info.width = par->width;
  info.height = par->height;
  if (info.width <= 0 || info.height <= 0) return Status::invalid_data("the " + info.codec + " stream has no frame size");
  if (info.width * info.height > max_frame_pixels)
    return Status::resource_exhausted("frames of " + std::to_string(info.width) + "x" + std::to_string(info.height) +
                                      " are over max_frame_pixels (" + std::to_string(max_frame_pixels) + ")");
  info.rotation = rotation_of(st);
  info.time_base_num = st->time_base.num;
  info.time_base_den = st->time_base.den;
  if (info.time_base_num <= 0 || info.time_base_den <= 0) info.time_base_num = info.time_base_den = 1;

  discard_all_but(fmt, index);
  FirstFrame first(st, max_frame_pixels);
  std::vector<PacketTimes> packets;
  AVPacket* pkt = packet;
  int read_error = 0;
  for (int again = 0;;) {
    int err = av_read_frame(fmt, pkt);
    if (err == AVERROR(EAGAIN) && ++again < 1000) continue;
    if (err < 0) {
      if (!in.io_error().is_ok()) return in.io_error();
      if (err != AVERROR_EOF) read_error = err;
      break;
    }
    // Empty packets carry no frame; those marked discard (before an MP4 edit list's start) are
    // decoded as references but their frames are dropped by libavcodec.
    if (pkt->stream_index == index && pkt->size > 0) {
      if (!(pkt->flags & AV_PKT_FLAG_DISCARD))
        packets.push_back({pkt->pts, pkt->dts, pkt->duration, (pkt->flags & AV_PKT_FLAG_KEY) != 0});
      first.send(pkt, frame);
    }
    av_packet_unref(pkt);
  }
  // The frames' size is the decoder's, which the stream's header does not always say: a Theora
  // picture offset that libavcodec's aligned cropping cannot remove makes 218 of 214 columns.
  if (first.done()) {
    info.width = first.width();
    info.height = first.height();
    const char* decoded = av_get_pix_fmt_name(AVPixelFormat(first.format()));
    if (decoded) info.pixel_format = decoded;
  }
  if (packets.empty())
    return Status::invalid_data("the " + info.codec + " stream has no frames" +
                                (read_error < 0 ? " (libavformat: " + av_error_text(read_error) + ")" : ""));
  number_frames(packets, &info);
  return info;
}

// The first video stream that is not a cover picture, or -1.
int first_video_stream(const AVFormatContext* fmt) {
  for (unsigned i = 0; i < fmt->nb_streams; ++i) {
    const AVStream* st = fmt->streams[i];
    if (st->codecpar->codec_type == AVMEDIA_TYPE_VIDEO && !(st->disposition & AV_DISPOSITION_ATTACHED_PIC))
      return int(i);
  }
  return -1;
}

void discard_all_but(AVFormatContext* fmt, int index) {
  for (unsigned i = 0; i < fmt->nb_streams; ++i)
    fmt->streams[i]->discard = int(i) == index ? AVDISCARD_DEFAULT : AVDISCARD_ALL;
}

}  // namespace detail::video

double VideoInfo::frame_time(int64_t i) const {
  if (pts.empty() || i < 0 || i >= num_frames()) return 0;
  return double(pts[size_t(i)] - pts.front()) * double(time_base_num) / double(time_base_den);
}

double VideoInfo::duration() const {
  if (pts.empty()) return 0;
  return double(pts.back() - pts.front() + last_frame_duration) * double(time_base_num) / double(time_base_den);
}

double VideoInfo::average_fps() const {
  if (pts.size() < 2 || pts.back() == pts.front()) return 0;
  return double(num_frames() - 1) / (double(pts.back() - pts.front()) * double(time_base_num) / double(time_base_den));
}

}  // namespace hdl
