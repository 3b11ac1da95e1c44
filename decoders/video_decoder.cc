// Video probe and decode with libavformat/libavcodec/libswscale (decoders/video_decoder.h).
//
// One decode() call: open the container over the RandomAccessFile, open a decoder, then for each
// frame asked for (ascending) seek to the keyframe at or before it when that skips decoding, feed
// packets, and identify each frame the decoder returns by its timestamp. What follows a seek is
// checked before it is trusted (the first frame at or after the keyframe sought is a keyframe no
// later than the target, the frames after it are undamaged and ascending); a seek that fails
// the checks is retried from a few frames earlier, then from earlier keyframes, then from the
// start of the file with no more seeks: an inexact index or a demuxer that mislabels the packets
// after a seek costs time, never a wrong frame.
#include "decoders/video_decoder.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/display.h>
#include <libavutil/hwcontext.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <type_traits>
#include <string>
#include <utility>

#include "media/file_system.h"

#if HDL_HAVE_CUDA
extern "C" {
#include <libavutil/hwcontext_cuda.h>
}
#include "media/cuda/allocator.h"
#include "media/cuda/runtime.h"
#include "media/cuda/stream.h"
#include "pipeline/kernels/cuda/geometry.h"
#include "pipeline/kernels/cuda/yuv.h"
#endif

namespace hdl {
namespace {

constexpr int kIoBufferSize = 64 * 1024;
constexpr int kMaxBadSeeks = 3;  // then decode forward from the start, seeking no more
// Frames before a keyframe that a seek aims at when an exact seek missed (or in an MPEG stream,
// where it would land on the keyframe's own PES packet: its dts is up to the reorder depth
// below its pts, and the frame landed on loses its timestamps).
constexpr int64_t kSeekBack = 6;
constexpr int64_t kMinSkip = 2;   // frames a seek must skip to be worth making

std::string av_error_text(int err) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(err, buf, sizeof(buf));
  return buf;
}

// FFmpeg logs its complaints about bad input to stderr; our callers get them as Status values
// (decoders/README.md: no message on stderr for bad bytes). The log callback is process-wide, so
// ours drops only what is logged on a thread inside a VideoDecoder call and hands everything
// else to FFmpeg's default callback. (Decoder threads log through the codec context, whose
// log_level_offset already puts them below any level.)
thread_local int t_quiet = 0;

void quiet_log(void* avcl, int level, const char* fmt, va_list args) {
  if (t_quiet > 0) return;
  av_log_default_callback(avcl, level, fmt, args);
}

class QuietLog {
 public:
  QuietLog() {
    static std::once_flag once;
    std::call_once(once, [] { av_log_set_callback(quiet_log); });
    ++t_quiet;
  }
  ~QuietLog() { --t_quiet; }
  QuietLog(const QuietLog&) = delete;
  QuietLog& operator=(const QuietLog&) = delete;
};

class MemoryFile final : public RandomAccessFile {
 public:
  explicit MemoryFile(std::span<const uint8_t> bytes) : bytes_(bytes) {}
  int64_t size() const override { return int64_t(bytes_.size()); }
  Result<int64_t> read(int64_t offset, int64_t n, void* dst) const override {
    if (offset < 0 || n < 0) return Status::invalid_argument("negative offset or length");
    if (offset >= size()) return int64_t(0);
    const int64_t k = std::min(n, size() - offset);
    std::memcpy(dst, bytes_.data() + offset, size_t(k));
    return k;
  }

 private:
  std::span<const uint8_t> bytes_;
};

// The AVIOContext callbacks: FFmpeg reads the file through RandomAccessFile::read at a position
// of our own. The first I/O error is kept so that it, not FFmpeg's generic EIO, is what the
// caller sees.
struct FileIo {
  const RandomAccessFile* file = nullptr;
  int64_t size = 0;
  int64_t pos = 0;
  Status error;

  static int read(void* opaque, uint8_t* buf, int n) {
    auto* io = static_cast<FileIo*>(opaque);
    Result<int64_t> got = io->file->read(io->pos, n, buf);
    if (!got.is_ok()) {
      if (io->error.is_ok()) io->error = got.status();
      return AVERROR(EIO);
    }
    if (*got <= 0) return AVERROR_EOF;
    io->pos += *got;
    return int(*got);
  }

  static int64_t seek(void* opaque, int64_t offset, int whence) {
    auto* io = static_cast<FileIo*>(opaque);
    switch (whence & ~AVSEEK_FORCE) {
      case AVSEEK_SIZE: return io->size;
      case SEEK_SET: break;
      case SEEK_CUR: offset += io->pos; break;
      case SEEK_END: offset += io->size; break;
      default: return AVERROR(EINVAL);
    }
    if (offset < 0) return AVERROR(EINVAL);
    io->pos = offset;
    return offset;
  }
};

// Demuxers that name other files (HLS, DASH, concat) must not open anything: the file is all
// the input there is.
int refuse_io_open(AVFormatContext*, AVIOContext**, const char*, int, AVDictionary**) {
  return AVERROR(EPERM);
}

// An open container (AVFormatContext over an AVIOContext over the file).
class Input {
 public:
  Input() = default;
  Input(const Input&) = delete;
  Input& operator=(const Input&) = delete;
  ~Input() {
    avformat_close_input(&fmt_);  // leaves our AVIOContext alone (AVFMT_FLAG_CUSTOM_IO)
    if (avio_) av_freep(&avio_->buffer);
    avio_context_free(&avio_);
  }

  /// Opens `file` as `format` (nullptr: probe the bytes); `what` prefixes a failure's message.
  Status open(const RandomAccessFile& file, const AVInputFormat* format, const char* what) {
    io_.file = &file;
    io_.size = file.size();
    auto* buffer = static_cast<uint8_t*>(av_malloc(kIoBufferSize));
    if (!buffer) return Status::resource_exhausted("out of memory");
    avio_ = avio_alloc_context(buffer, kIoBufferSize, 0, &io_, &FileIo::read, nullptr, &FileIo::seek);
    if (!avio_) {
      av_free(buffer);
      return Status::resource_exhausted("out of memory");
    }
    fmt_ = avformat_alloc_context();
    if (!fmt_) return Status::resource_exhausted("out of memory");
    fmt_->pb = avio_;
    fmt_->flags |= AVFMT_FLAG_CUSTOM_IO;
    fmt_->io_open = refuse_io_open;
    if (int err = avformat_open_input(&fmt_, "", format, nullptr); err < 0)  // frees fmt_
      return error(err, std::string(what) + " (libavformat: ");
    const std::string name = fmt_->iformat->name;
    mpeg_stream_ = name == "mpeg" || name == "mpegts";
    return Status::ok();
  }

  AVFormatContext* fmt() const { return fmt_; }
  /// An MPEG program or transport stream: no index, so libavformat seeks by bisecting the file
  /// on decode timestamps, landing at the start of a PES packet whose timestamps the demuxer
  /// then hands to the tail of the frame before it (which it returns first).
  bool mpeg_stream() const { return mpeg_stream_; }
  const Status& io_error() const { return io_.error; }

  /// The Status for FFmpeg error `err`: the file's own I/O error if there was one (FFmpeg only
  /// saw EIO), else kInvalidData "<what><FFmpeg's words>)" (what ends with an open parenthesis).
  Status error(int err, const std::string& what) const {
    if (!io_.error.is_ok()) return io_.error;
    if (err == AVERROR(ENOMEM)) return Status::resource_exhausted("out of memory");
    return Status::invalid_data(what + av_error_text(err) + ")");
  }

 private:
  FileIo io_;
  AVIOContext* avio_ = nullptr;
  AVFormatContext* fmt_ = nullptr;
  bool mpeg_stream_ = false;
};

// Reads the start of the file for the streams' parameters, decoding a few frames of each:
// bounded by libavformat's probesize (5 MB) and analyzeduration (5 s), as in the CLI, and its
// decoders refuse frames over max_pixels before allocating them. Failing to find some
// parameters is not an error (the CLI goes on too); an I/O error is.
Status find_stream_info(const Input& in, int64_t max_pixels) {
  AVFormatContext* fmt = in.fmt();
  std::vector<AVDictionary*> options(fmt->nb_streams, nullptr);
  for (AVDictionary*& d : options) av_dict_set_int(&d, "max_pixels", max_pixels, 0);
  avformat_find_stream_info(fmt, options.empty() ? nullptr : options.data());
  for (AVDictionary*& d : options) av_dict_free(&d);
  return in.io_error();
}

const AVInputFormat* find_demuxer(const std::string& name) {
  void* it = nullptr;
  while (const AVInputFormat* f = av_demuxer_iterate(&it))
    if (name == f->name) return f;
  return nullptr;
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

// BGR is converted as RGB, then swapped: libswscale's bgr24 output differs from its rgb24 by a
// level here and there for 10-bit input, and BGR must be RGB reversed, as for images.
AVPixelFormat av_format_of(ColorFormat color) {
  return color == ColorFormat::kGray ? AV_PIX_FMT_GRAY8 : AV_PIX_FMT_RGB24;
}

// RGB to BGR in place, over an [H, W, 3] view with any strides.
void swap_red_blue(const TensorView& v) {
  auto* base = static_cast<uint8_t*>(v.data);
  for (int64_t y = 0; y < v.shape[0]; ++y) {
    uint8_t* p = base + y * v.strides[0];
    for (int64_t x = 0; x < v.shape[1]; ++x, p += v.strides[1]) std::swap(p[0], p[2 * v.strides[2]]);
  }
}

// The value stored in an FFmpeg enum field, read as the int it is. Decoders copy colour fields
// from the bitstream unchecked (H.264's VUI gives 0-255 for matrix_coefficients, which lands in
// AVFrame::colorspace as is), and loading a value outside the enum's range from an lvalue of the
// enum type is undefined behaviour (UBSan: "load of value 243, which is not a valid value for type
// 'enum AVColorSpace'"); its bytes are an int, so read them as one.
template <typename Enum>
int enum_value(const Enum& field) {
  static_assert(std::is_enum_v<Enum> && sizeof(Enum) == sizeof(int));
  int v;
  std::memcpy(&v, &field, sizeof v);
  return v;
}

// libswscale configured as the ffmpeg 5.1 CLI's automatically inserted scale filter configures
// it (libavfilter/vf_scale.c: config_props and scale_frame): flags "bicubic", MPEG-2 vertical
// chroma siting for yuv420p input, and per frame the frame's colour matrix (in_color_matrix
// "auto": unspecified or unknown is BT.601) and range. That makes the output equal to
// `ffmpeg -i F -pix_fmt rgb24` byte for byte.
class Converter {
 public:
  ~Converter() { sws_freeContext(sws_); }

  /// Converts `f` to `dst_w` x `dst_h` pixels of `dst_fmt` at `dst` (rows `dst_stride` bytes
  /// apart). libswscale may write up to 15 pixels past the end of a row: the caller makes room.
  Status convert(const AVFrame* f, int dst_w, int dst_h, AVPixelFormat dst_fmt, uint8_t* dst, int dst_stride) {
    const Key key{f->width, f->height, f->format, dst_w, dst_h, dst_fmt};
    if (!sws_ || !(key == key_)) HDL_RETURN_IF_ERROR(configure(key));
    const int colorspace = enum_value(f->colorspace), range = enum_value(f->color_range);
    if (colorspace != colorspace_ || range != range_) {
      int *inv_table = nullptr, *table = nullptr;
      int in_full = 0, out_full = 0, brightness = 0, contrast = 0, saturation = 0;
      sws_getColorspaceDetails(sws_, &inv_table, &in_full, &table, &out_full, &brightness, &contrast, &saturation);
      int cs = colorspace;
      if (cs < 1 || cs > 10 || cs == 8) cs = AVCOL_SPC_BT470BG;  // vf_scale's parse_yuv_type("auto")
      const int* matrix = sws_getCoefficients(cs);
      if (range != AVCOL_RANGE_UNSPECIFIED) in_full = range == AVCOL_RANGE_JPEG;
      sws_setColorspaceDetails(sws_, matrix, in_full, matrix, out_full, brightness, contrast, saturation);
      colorspace_ = colorspace;
      range_ = range;
    }
    uint8_t* planes[4] = {dst, nullptr, nullptr, nullptr};
    int strides[4] = {dst_stride, 0, 0, 0};
    if (sws_scale(sws_, f->data, f->linesize, 0, f->height, planes, strides) != dst_h)
      return Status::internal("libswscale converted fewer rows than asked");
    return Status::ok();
  }

 private:
  struct Key {
    int w, h, fmt, dst_w, dst_h, dst_fmt;
    bool operator==(const Key&) const = default;
  };

  Status configure(const Key& k) {
    sws_freeContext(sws_);
    sws_ = sws_alloc_context();
    if (!sws_) return Status::resource_exhausted("out of memory");
    av_opt_set_int(sws_, "sws_flags", SWS_BICUBIC, 0);
    av_opt_set_int(sws_, "srcw", k.w, 0);
    av_opt_set_int(sws_, "srch", k.h, 0);
    av_opt_set_int(sws_, "src_format", k.fmt, 0);
    av_opt_set_int(sws_, "dstw", k.dst_w, 0);
    av_opt_set_int(sws_, "dsth", k.dst_h, 0);
    av_opt_set_int(sws_, "dst_format", k.dst_fmt, 0);
    if (k.fmt == AV_PIX_FMT_YUV420P) av_opt_set_int(sws_, "src_v_chr_pos", 128, 0);
    if (sws_init_context(sws_, nullptr, nullptr) < 0) {
      sws_freeContext(sws_);
      sws_ = nullptr;
      const char* name = av_get_pix_fmt_name(AVPixelFormat(k.fmt));
      return Status::unsupported(std::string("libswscale cannot convert pixel format ") + (name ? name : "?"));
    }
    key_ = k;
    colorspace_ = -1;
    range_ = -1;
    return Status::ok();
  }

  SwsContext* sws_ = nullptr;
  Key key_{};
  int colorspace_ = -1;
  int range_ = -1;
};

// Grows-only byte buffer with room for libswscale's over-writes.
class Scratch {
 public:
  uint8_t* get(size_t n) {
    n += 64;
    if (n > size_) {
      av_free(data_);
      data_ = static_cast<uint8_t*>(av_malloc(n));
      size_ = data_ ? n : 0;
    }
    return data_;
  }
  ~Scratch() { av_free(data_); }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// Copies `src` (h rows of w pixels of c bytes, `stride` bytes apart) into `out` ([H, W, c],
// any strides), rotated clockwise by `rotation` degrees (as transpose=clock for 90, hflip+vflip
// for 180, transpose=cclock for 270). Quarter turns read the source down its columns, so they
// go by tiles that stay in cache.
template <int C>
void rotate_tile(const uint8_t* s, int64_t step, uint8_t* d, int64_t ps, int64_t n) {
  for (int64_t x = 0; x < n; ++x, d += ps)
    for (int k = 0; k < C; ++k) d[k] = s[x * step + k];
}

void write_rotated(const uint8_t* src, int64_t stride, int64_t w, int64_t h, int64_t c, int rotation,
                   const TensorView& out) {
  auto* dst = static_cast<uint8_t*>(out.data);
  const int64_t out_h = out.shape[0], out_w = out.shape[1];
  const int64_t rs = out.strides[0], ps = out.strides[1];
  constexpr int64_t kTile = 8;  // measured: 8 beats 16, 32 and 64 on a 1080p quarter turn
  for (int64_t x0 = 0; x0 < out_w; x0 += kTile) {
    const int64_t n = std::min(kTile, out_w - x0);
    for (int64_t y = 0; y < out_h; ++y) {
      const uint8_t* s;
      int64_t step;  // bytes from one source pixel to the next along an output row
      switch (rotation) {
        case 90: s = src + (h - 1 - x0) * stride + y * c, step = -stride; break;
        case 180: s = src + (h - 1 - y) * stride + (w - 1 - x0) * c, step = -c; break;
        case 270: s = src + x0 * stride + (w - 1 - y) * c, step = stride; break;
        default: s = src + y * stride + x0 * c, step = c; break;
      }
      uint8_t* d = dst + y * rs + x0 * ps;
      if (step == c && ps == c) {
        std::memcpy(d, s, size_t(n * c));
      } else if (c == 3) {
        rotate_tile<3>(s, step, d, ps, n);
      } else {
        rotate_tile<1>(s, step, d, ps, n);
      }
    }
  }
}

Status check_frames(const VideoInfo& info, std::span<const int64_t> frames) {
  if (info.stream_index < 0 || info.pts.empty() || info.keyframes.empty() || info.width <= 0 || info.height <= 0)
    return Status::invalid_argument("the VideoInfo does not come from probe() of a video with frames");
  for (size_t k = 0; k < frames.size(); ++k) {
    if (frames[k] < 0 || frames[k] >= info.num_frames())
      return Status::invalid_argument("frame index " + std::to_string(frames[k]) + " is out of range: the video has " +
                                      std::to_string(info.num_frames()) + " frames");
    if (k > 0 && frames[k] < frames[k - 1])
      return Status::invalid_argument("frame indices must be ascending: " + std::to_string(frames[k]) + " after " +
                                      std::to_string(frames[k - 1]));
  }
  return Status::ok();
}

// ---- NVDEC, through FFmpeg's cuda hwaccel ----
//
// A decoder context gets FFmpeg's CUDA device (opened on CUDA's primary context, the one the
// CUDA runtime, this library's kernels and torch use, with the caller's stream as the device's
// stream: FFmpeg copies each decoded picture out of NVDEC's surfaces on it) and a get_format
// that accepts only AV_PIX_FMT_CUDA. When NVDEC cannot take the stream (FFmpeg's hwaccel init
// checks the GPU's decoder capabilities: codec, profile, chroma format, bit depth, size), FFmpeg
// offers the software formats only and get_format refuses them: the decode fails, reported as
// kUnsupported "NVDEC ...", and the caller decodes the video on the CPU.

// Whether this FFmpeg build has a cuda hwaccel for `codec`.
bool has_cuda_hwaccel(const AVCodec* codec) {
  for (int i = 0;; ++i) {
    const AVCodecHWConfig* c = avcodec_get_hw_config(codec, i);
    if (!c) return false;
    if (c->device_type == AV_HWDEVICE_TYPE_CUDA && (c->methods & AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX)) return true;
  }
}

// What get_format saw, reached through AVCodecContext::opaque.
struct HwFormat {
  bool refused = false;
};

AVPixelFormat pick_cuda_format(AVCodecContext* ctx, const AVPixelFormat* formats) {
  for (const AVPixelFormat* f = formats; *f != AV_PIX_FMT_NONE; ++f)
    if (*f == AV_PIX_FMT_CUDA) return *f;
  if (ctx->opaque) static_cast<HwFormat*>(ctx->opaque)->refused = true;
  return AV_PIX_FMT_NONE;
}

// FFmpeg's CUDA device `index` on the CUDA runtime's context (the primary one, which this
// library's kernels and torch use; FFmpeg's own "primary_ctx" option refuses it once the runtime
// has activated it, its scheduling flags being other than FFmpeg wants), with `stream` (a
// cudaStream_t) as the stream of its copies. The caller owns the reference.
Result<AVBufferRef*> open_cuda_device(int index, void* stream) {
#if HDL_HAVE_CUDA
  Result<void*> context = cuda::runtime_context(Device::cuda(index));
  if (!context.is_ok()) return Status::unsupported("NVDEC: " + context.status().message());
  AVBufferRef* ref = av_hwdevice_ctx_alloc(AV_HWDEVICE_TYPE_CUDA);
  if (!ref) return Status::resource_exhausted("out of memory");
  auto* device = reinterpret_cast<AVHWDeviceContext*>(ref->data);
  auto* cu = static_cast<AVCUDADeviceContext*>(device->hwctx);
  cu->cuda_ctx = static_cast<CUcontext>(*context);  // not FFmpeg's: it leaves it alone when done
  cu->stream = static_cast<CUstream>(stream);
  if (const int err = av_hwdevice_ctx_init(ref); err < 0) {
    av_buffer_unref(&ref);
    return Status::unsupported("NVDEC: FFmpeg cannot use CUDA device " + std::to_string(index) + ": " +
                               av_error_text(err));
  }
  return ref;
#else
  (void)index, (void)stream;
  return Status::unsupported("NVDEC: not available: built without CUDA");
#endif
}

// Whether FFmpeg opens CUDA device `index` at all (libcuda there, the device usable): asked
// once per process and device.
Status cuda_device_status(int index) {
  if (index < 0 || index >= 64) return Status::invalid_argument("CUDA device index " + std::to_string(index) + " out of range");
  static std::once_flag once[64];
  static Status status[64];
  std::call_once(once[index], [&] {
    QuietLog quiet;
    Result<AVBufferRef*> ref = open_cuda_device(index, nullptr);
    if (ref.is_ok()) av_buffer_unref(&*ref);
    status[index] = ref.status();
  });
  return status[index];
}

#if HDL_HAVE_CUDA
// A decoded NVDEC frame's planes as the conversion kernel reads them.
Result<kernels::YuvFrame> device_planes(const AVFrame* f) {
  if (!f->hw_frames_ctx) return Status::internal("NVDEC frame without a frames context");
  const auto* frames = reinterpret_cast<const AVHWFramesContext*>(f->hw_frames_ctx->data);
  kernels::YuvFrame y;
  switch (frames->sw_format) {
    case AV_PIX_FMT_NV12: y.layout = kernels::YuvLayout::kSemiPlanar420; y.bytes = 1; break;
    case AV_PIX_FMT_P010LE:
    case AV_PIX_FMT_P016LE: y.layout = kernels::YuvLayout::kSemiPlanar420; y.bytes = 2; break;
    case AV_PIX_FMT_YUV444P: y.layout = kernels::YuvLayout::kPlanar444; y.bytes = 1; break;
    case AV_PIX_FMT_YUV444P16LE: y.layout = kernels::YuvLayout::kPlanar444; y.bytes = 2; break;
    default: {
      const char* name = av_get_pix_fmt_name(frames->sw_format);
      return Status::unsupported(std::string("NVDEC surface format ") + (name ? name : "?") + " is not converted here");
    }
  }
  for (int i = 0; i < 3; ++i) {
    y.plane[i] = f->data[i];
    y.pitch[i] = f->linesize[i];
  }
  y.width = f->width;
  y.height = f->height;
  return y;
}

// Whether libswscale reads `format` as full range when the frame does not say (the yuvj formats).
bool full_range_format(int format) {
  return format == AV_PIX_FMT_YUVJ420P || format == AV_PIX_FMT_YUVJ422P || format == AV_PIX_FMT_YUVJ444P ||
         format == AV_PIX_FMT_YUVJ440P || format == AV_PIX_FMT_YUVJ411P;
}
#endif

}  // namespace

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

std::unique_ptr<RandomAccessFile> memory_file(std::span<const uint8_t> bytes) {
  return std::make_unique<MemoryFile>(bytes);
}

namespace {

// One decode call: the container and decoder, where decoding stands, and the loop that brings
// the wanted frames out of the decoder (class comment at the top of the file).
class ClipDecode {
 public:
  // Called with each wanted frame as it comes out: its position in `wanted` and the frame.
  using Deliver = std::function<Status(size_t u, const AVFrame* frame)>;

  /// `hw_device`: FFmpeg's CUDA device for NVDEC decoding (not owned), or nullptr for the CPU.
  ClipDecode(const RandomAccessFile& file, const VideoInfo& info, const VideoDecoderOptions& options,
             AVPacket* packet, AVFrame* frame, VideoDecodeReport& report, AVBufferRef* hw_device = nullptr)
      : file_(file), info_(info), options_(options), packet_(packet), frame_(frame), report_(report),
        hw_device_(hw_device) {
    report_.on_device = hw_device != nullptr;
  }
  ~ClipDecode() { close_codec(); }
  ClipDecode(const ClipDecode&) = delete;
  ClipDecode& operator=(const ClipDecode&) = delete;

  /// Decodes until every frame of `wanted` (ascending, distinct) has been delivered. With
  /// `skip_unwanted`, frames no other frame refers to and that are not wanted are not decoded
  /// at all (libavcodec's AVDISCARD_NONREF, set per packet): B-frames before and between the
  /// frames of a clip cost only their parsing, and in an intra-only stream unwanted frames are
  /// not even sent to the decoder. A packet is judged by its timestamp, so a
  /// container whose timestamps cannot be trusted must not use it (see skip_possible()).
  Status run(const std::vector<int64_t>& wanted, const Deliver& deliver, bool skip_unwanted = false) {
    wanted_ = &wanted;
    skip_unwanted_ = skip_unwanted;
    skip_intra_ = skip_unwanted && info_.keyframes.size() == info_.pts.size();
    HDL_RETURN_IF_ERROR(open());
    // Each step receives a frame, reads a packet or starts draining; a file of n packets needs
    // about n steps per pass, and there is a pass per seek (bounded) plus one from the start.
    const int64_t max_steps = 4 * (info_.num_frames() + 64) * (kMaxBadSeeks + 2 + int64_t(wanted.size()));
    size_t next = 0;
    int64_t planned = -1;
    for (int64_t steps = 0; next < wanted.size(); ++steps) {
      const int64_t target = wanted[next];
      if (target != planned) {
        HDL_RETURN_IF_ERROR(plan(target));
        planned = target;
      }
      if (steps > max_steps) return missing(target, "decoding made no progress");
      int err = avcodec_receive_frame(codec_, frame_);
      if (err == AVERROR(EAGAIN)) {
        if (draining_) return missing(target, "the decoder stalled");
        HDL_RETURN_IF_ERROR(feed());
        continue;
      }
      if (err == AVERROR_EOF) {
        if (seeked_ && !run_started_) {  // the seek went past everything this run was for
          HDL_RETURN_IF_ERROR(reseek());
          continue;
        }
        return missing(target, "the stream ended before it");
      }
      if (err < 0) return codec_error(err);
      ++report_.frames_decoded;
      Status s = on_frame(identify(), target, next, deliver);
      av_frame_unref(frame_);
      HDL_RETURN_IF_ERROR(s);
    }
    if (!input_->io_error().is_ok()) return input_->io_error();
    return Status::ok();
  }

 private:
  // (Re)opens the container and the decoder, positioned at the start of the file.
  Status open() {
    close_codec();
    input_ = std::make_unique<Input>();
    HDL_RETURN_IF_ERROR(input_->open(file_, find_demuxer(info_.container), "the video cannot be opened"));
    AVFormatContext* fmt = input_->fmt();
    const int index = info_.stream_index;
    // Containers that declare their streams in a header need no stream probing (which decodes
    // several frames); those that do not (MPEG-PS) get it, as probe() did.
    const bool known = !(fmt->ctx_flags & AVFMTCTX_NOHEADER) && index < int(fmt->nb_streams) &&
                       fmt->streams[index]->codecpar->codec_id != AV_CODEC_ID_NONE &&
                       fmt->streams[index]->codecpar->width > 0;
    if (!known) HDL_RETURN_IF_ERROR(find_stream_info(*input_, options_.max_frame_pixels));
    if (index >= int(fmt->nb_streams) || fmt->streams[index]->codecpar->codec_type != AVMEDIA_TYPE_VIDEO)
      return Status::invalid_data("stream " + std::to_string(index) + " is not a video stream: the file is not the one probed");
    discard_all_but(fmt, index);
    stream_ = fmt->streams[index];
    const AVCodec* codec = avcodec_find_decoder(stream_->codecpar->codec_id);
    if (!codec) return Status::unsupported("no decoder for video codec " + info_.codec + " in this FFmpeg build");
    codec_ = avcodec_alloc_context3(codec);
    if (!codec_) return Status::resource_exhausted("out of memory");
    if (int err = avcodec_parameters_to_context(codec_, stream_->codecpar); err < 0) return codec_error(err);
    codec_->pkt_timebase = stream_->time_base;
    codec_->thread_count = threads();
    codec_->thread_type = FF_THREAD_FRAME | FF_THREAD_SLICE;
    codec_->max_pixels = options_.max_frame_pixels;
    codec_->log_level_offset = 100;  // levels 8..56 -> 108..156: below any log level
    if (hw_device_) {
      codec_->hw_device_ctx = av_buffer_ref(hw_device_);
      if (!codec_->hw_device_ctx) return Status::resource_exhausted("out of memory");
      codec_->get_format = pick_cuda_format;
      codec_->opaque = &hw_format_;
    }
    if (int err = avcodec_open2(codec_, codec, nullptr); err < 0) {
      if (hw_format_.refused) return nvdec_refused();
      if (err == AVERROR(ENOMEM)) return Status::resource_exhausted("out of memory");
      return Status::unsupported("cannot open the FFmpeg " + info_.codec + " decoder: " + av_error_text(err));
    }
    if (input_->mpeg_stream()) seek_back_ = kSeekBack;
    run_key_ = 0;
    run_key_frame_ = info_.keyframes.front();
    seeked_ = false;
    run_started_ = false;
    last_ = -1;
    draining_ = false;
    pending_ = false;
    output_count_ = 0;
    return Status::ok();
  }

  void close_codec() {
    avcodec_free_context(&codec_);
    av_packet_unref(packet_);
    input_.reset();
  }

  // Seeks to the keyframe at or before `target` when that skips decoding.
  Status plan(int64_t target) {
    if (info_.sequential || no_seeks_) return Status::ok();
    const auto& keys = info_.keyframes;
    const int64_t key = std::upper_bound(keys.begin(), keys.end(), target) - keys.begin() - 1;
    // Seek when it skips at least kMinSkip frames that decoding on would pass through.
    if (key < 0 || keys[key] <= run_key_frame_ || keys[key] < last_ + 1 + kMinSkip) return Status::ok();
    return seek(key);
  }

  Status seek(int64_t key) {
    ++report_.seeks;
    const int64_t frame = info_.keyframes[size_t(key)];
    const int64_t ts = info_.pts[size_t(std::max<int64_t>(0, frame - seek_back_))];
    if (int err = av_seek_frame(input_->fmt(), stream_->index, ts, AVSEEK_FLAG_BACKWARD); err < 0) {
      if (!input_->io_error().is_ok()) return input_->io_error();
      // The container cannot seek: go on decoding forward (right, only slower).
      no_seeks_ = true;
      return Status::ok();
    }
    avcodec_flush_buffers(codec_);
    av_packet_unref(packet_);
    pending_ = false;
    draining_ = false;
    run_key_ = key;
    run_key_frame_ = frame;
    seeked_ = true;
    run_started_ = false;
    last_ = frame - 1;
    return Status::ok();
  }

  // A seek landed in the wrong place. Retry the same keyframe from a few frames before it (a
  // demuxer that bisects the file on decode timestamps, as MPEG-PS's does, lands on the packet
  // after a keyframe whose dts is below its pts), then earlier keyframes; then give up seeking
  // and start again from the beginning of the file.
  Status reseek() {
    if (++bad_seeks_ <= kMaxBadSeeks) {
      if (seek_back_ == 0) {
        seek_back_ = kSeekBack;
        return seek(run_key_);
      }
      if (run_key_ > 0) return seek(run_key_ - 1);
    }
    no_seeks_ = true;
    return open();
  }

  // Reads the next packet of the stream and sends it to the decoder; at the end of the file (or
  // at a read error, as the ffmpeg CLI does) starts draining the decoder.
  Status feed() {
    if (!pending_) {
      for (int again = 0;;) {
        int err = av_read_frame(input_->fmt(), packet_);
        if (err == AVERROR(EAGAIN) && ++again < 1000) continue;
        if (err < 0) {
          if (!input_->io_error().is_ok()) return input_->io_error();
          if (err != AVERROR_EOF) read_error_ = err;
          draining_ = true;
          err = avcodec_send_packet(codec_, nullptr);
          return err < 0 && err != AVERROR_EOF ? codec_error(err) : Status::ok();
        }
        // Empty packets (AVI's dropped frames) carry no frame, and an empty send would drain.
        // In an intra-only stream (every frame a keyframe: MJPEG, ...) no frame needs another,
        // so an unwanted one is not even sent.
        if (packet_->stream_index == stream_->index && packet_->size > 0 && !(skip_intra_ && !packet_wanted())) break;
        av_packet_unref(packet_);
      }
    }
    if (skip_unwanted_ && !pending_) codec_->skip_frame = packet_wanted() ? AVDISCARD_DEFAULT : AVDISCARD_NONREF;
    int err = avcodec_send_packet(codec_, packet_);
    pending_ = err == AVERROR(EAGAIN);  // receive first, then send it again
    if (pending_) return Status::ok();
    av_packet_unref(packet_);
    ++report_.packets;
    return err < 0 ? codec_error(err) : Status::ok();
  }

  // Whether the packet in packet_ holds a wanted frame (or one it cannot tell).
  bool packet_wanted() const {
    if (packet_->pts == AV_NOPTS_VALUE) return true;
    const auto it = std::lower_bound(info_.pts.begin(), info_.pts.end(), packet_->pts);
    if (it == info_.pts.end() || *it != packet_->pts) return true;
    return std::binary_search(wanted_->begin(), wanted_->end(), int64_t(it - info_.pts.begin()));
  }

 public:
  /// Whether run(..., skip_unwanted = true) may be used: one decoder thread (the per-packet
  /// setting is then read for that packet), timestamps from a container that gives every
  /// packet its own (not an MPEG stream, whose demuxer hands timestamps to neighbouring
  /// packets), frames numbered by timestamp.
  bool skip_possible() const { return threads() == 1 && !info_.sequential && !mpeg_container(); }

  /// The decoder's threads: NVDEC decodes with one (the hardware does the work).
  int threads() const { return hw_device_ ? 1 : options_.threads; }

 private:
  bool mpeg_container() const {
    const std::string& c = info_.container;
    return c == "mpeg" || c == "mpegts" || c == "mpegvideo" || c == "h264" || c == "hevc";
  }

  // The frame's index in presentation order (decode order for sequential videos), or -1 for a
  // frame whose timestamp is not one of the video's. After a seek only a timestamp the frame's
  // packet carried counts, not libavcodec's guess.
  int64_t identify() {
    if (info_.sequential) return output_count_++;
    int64_t ts = frame_->pts;
    if (ts == AV_NOPTS_VALUE && !seeked_) ts = frame_->best_effort_timestamp;
    if (ts == AV_NOPTS_VALUE) return -1;
    auto it = std::lower_bound(info_.pts.begin(), info_.pts.end(), ts);
    return it != info_.pts.end() && *it == ts ? it - info_.pts.begin() : -1;
  }

  Status on_frame(int64_t index, int64_t target, size_t& next, const Deliver& deliver) {
    if (seeked_) {
      // After a seek the demuxer's first timestamps can be wrong, and frames decoded without
      // their references are damaged. A run is trusted only if its first frame at or after the
      // keyframe sought is a keyframe to both the decoder and probe(), no later than the
      // target, and every frame after it is undamaged, identified, and later than the last.
      const bool damaged = frame_->decode_error_flags || (frame_->flags & AV_FRAME_FLAG_CORRUPT);
      if (!run_started_) {
        if (index < run_key_frame_) return Status::ok();  // before the keyframe: not wanted
        run_started_ = true;
        const bool key = frame_->key_frame || frame_->pict_type == AV_PICTURE_TYPE_I;
        if (index > target || !key || damaged ||
            !std::binary_search(info_.keyframes.begin(), info_.keyframes.end(), index))
          return reseek();
      } else if (index <= last_ || damaged) {
        return reseek();
      }
    }
    if (index < 0) return Status::ok();
    if (index < target) {
      last_ = std::max(last_, index);
      return Status::ok();
    }
    if (index > target)
      return missing(target, "the decoder went from frame " + std::to_string(last_) + " to frame " + std::to_string(index));
    last_ = index;
    HDL_RETURN_IF_ERROR(deliver(next, frame_));
    ++next;
    return Status::ok();
  }

  Status missing(int64_t target, const std::string& why) const {
    if (input_ && !input_->io_error().is_ok()) return input_->io_error();
    std::string msg = "frame " + std::to_string(target) + " of " + std::to_string(info_.num_frames()) +
                      " was never decoded (" + why;
    if (read_error_ < 0) msg += "; reading stopped at: " + av_error_text(read_error_);
    return Status::invalid_data(msg + "): truncated or corrupt video");
  }

  Status nvdec_refused() const {
    return Status::unsupported("NVDEC cannot decode this " + info_.codec + " stream (" + info_.pixel_format + ", " +
                               std::to_string(info_.width) + "x" + std::to_string(info_.height) +
                               "): FFmpeg's cuda hwaccel refused it");
  }

  Status codec_error(int err) const {
    if (input_ && !input_->io_error().is_ok()) return input_->io_error();
    if (hw_format_.refused) return nvdec_refused();
    if (err == AVERROR(ENOMEM)) return Status::resource_exhausted("out of memory in the " + info_.codec + " decoder");
    if (err == AVERROR_PATCHWELCOME || err == AVERROR(ENOSYS))
      return Status::unsupported(info_.codec + " decoder: " + av_error_text(err));
    return Status::invalid_data(info_.codec + " decoder: " + av_error_text(err));
  }

  const RandomAccessFile& file_;
  const VideoInfo& info_;
  const VideoDecoderOptions& options_;
  AVPacket* packet_;
  AVFrame* frame_;
  VideoDecodeReport& report_;
  AVBufferRef* hw_device_;
  HwFormat hw_format_;

  std::unique_ptr<Input> input_;
  AVStream* stream_ = nullptr;
  AVCodecContext* codec_ = nullptr;
  int64_t run_key_ = 0;        // index into info_.keyframes where this run started
  int64_t run_key_frame_ = 0;  // its frame index
  bool seeked_ = false;        // this run started with a seek (else at the start of the file)
  bool run_started_ = false;   // a frame at or after run_key_frame_ has come out
  int64_t last_ = -1;          // the highest frame index this run has produced
  bool draining_ = false;      // the end of the file was reached and the decoder is being drained
  bool pending_ = false;       // packet_ is waiting to be sent again
  int read_error_ = 0;         // why reading stopped, if not at the end of the file
  int64_t output_count_ = 0;   // sequential videos: frames out of the decoder so far
  int bad_seeks_ = 0;
  const std::vector<int64_t>* wanted_ = nullptr;
  bool skip_unwanted_ = false;  // packets of unwanted frames are sent with AVDISCARD_NONREF
  bool skip_intra_ = false;     // an intra-only stream: packets of unwanted frames are not sent
  int64_t seek_back_ = 0;      // frames before a keyframe a seek aims at (kSeekBack)
  bool no_seeks_ = false;
};

// `frames` without repeats, and for each distinct frame the first position it has in `frames`.
void distinct(std::span<const int64_t> frames, std::vector<int64_t>* wanted, std::vector<size_t>* first) {
  wanted->clear();
  first->clear();
  for (size_t k = 0; k < frames.size(); ++k) {
    if (k > 0 && frames[k] == frames[k - 1]) continue;
    wanted->push_back(frames[k]);
    first->push_back(k);
  }
}

}  // namespace

// What outlives a call: packet and frame, the libswscale context and conversion buffers, and
// with a cuda device FFmpeg's CUDA device and the device frame decode() hands out.
struct VideoDecoder::Impl {
  AVPacket* packet = av_packet_alloc();
  AVFrame* frame = av_frame_alloc();
  Converter converter;
  Scratch scratch;  // a converted frame on its way to a rotated or unconvertible-into output
  Scratch single;   // decode(): the frame handed to the sink
  AVBufferRef* hw_device = nullptr;  // NVDEC: FFmpeg's CUDA device (on the options' stream)
  StoragePtr device_single;          // decode() on the device: the frame handed to the sink
  ~Impl() {
    av_buffer_unref(&hw_device);
    av_frame_free(&frame);
    av_packet_free(&packet);
  }

  // FFmpeg's CUDA device for a cuda decoder (opened on first use), nullptr for the CPU.
  Result<AVBufferRef*> hardware(const VideoDecoderOptions& options) {
    if (options.device.is_cpu()) return static_cast<AVBufferRef*>(nullptr);
    if (!hw_device) {
      HDL_RETURN_IF_ERROR(cuda_device_status(options.device.index));
      HDL_ASSIGN_OR_RETURN(hw_device, open_cuda_device(options.device.index, options.cuda_stream));
    }
    return hw_device;
  }

  // An NVDEC frame converted by the device kernel into `out` (a device view), on the options'
  // stream.
  Status convert_on_device(const AVFrame* f, const VideoInfo& info, const VideoDecoderOptions& options, int rotation,
                           const TensorView& out) {
#if HDL_HAVE_CUDA
    if (f->width != info.width || f->height != info.height)
      return Status::unsupported("NVDEC gave a " + std::to_string(f->width) + "x" + std::to_string(f->height) +
                                 " frame for a " + std::to_string(info.width) + "x" + std::to_string(info.height) + " video");
    HDL_ASSIGN_OR_RETURN(const kernels::YuvFrame planes, device_planes(f));
    const int range = enum_value(f->color_range);
    const bool full = range == AVCOL_RANGE_JPEG ||
                      (range == AVCOL_RANGE_UNSPECIFIED && full_range_format(av_get_pix_fmt(info.pixel_format.c_str())));
    const kernels::YuvMatrix matrix = kernels::yuv_matrix(enum_value(f->colorspace), full);
    cuda::Stream stream = cuda::Stream::borrow(options.cuda_stream, options.device);
    HDL_RETURN_IF_ERROR(kernels::cuda::yuv_to_rgb(planes, matrix, rotation, options.color, out, stream));
    // The frame's planes are NVDEC's mapped output surface, which FFmpeg unmaps when the frame is
    // released (as soon as this frame is handled). Unmapping is not ordered on the stream
    // (NVIDIA's decoder samples synchronise before it), so the kernel reading it finishes first;
    // work the sink queues after this reads `out`, not the surface.
    return stream.synchronize();
#else
    (void)f, (void)info, (void)options, (void)rotation, (void)out;
    return Status::unsupported("NVDEC: not available: built without CUDA");
#endif
  }

  // A copy of a device frame into another device view (a repeated frame of decode_into()).
  static Status copy_on_device(const TensorView& from, const TensorView& to, const VideoDecoderOptions& options) {
#if HDL_HAVE_CUDA
    cuda::Stream stream = cuda::Stream::borrow(options.cuda_stream, options.device);
    return kernels::cuda::crop(from, 0, 0, to, stream);
#else
    (void)from, (void)to, (void)options;
    return Status::unsupported("not available: built without CUDA");
#endif
  }

  // decode()'s frame on the device: [H, W, C] in device memory, kept and grown.
  Result<TensorView> device_frame(const VideoDecoderOptions& options, const Shape& shape) {
#if HDL_HAVE_CUDA
    const size_t bytes = size_t(shape.num_elements());
    if (!device_single || device_single->capacity() < bytes) {
      device_single.reset();  // cudaFree waits for the work that may still read it
      device_single = Storage::allocate(cuda::device_allocator(options.device.index), bytes);
    }
    TensorView v(device_single->data(), shape, DType::kU8, Layout::kHWC);
    v.device = options.device;
    return v;
#else
    (void)options, (void)shape;
    return Status::unsupported("NVDEC: not available: built without CUDA");
#endif
  }

  // Decodes the distinct frames of `frames`, converting each into slot(k) for its first position
  // k in `frames`, then calls delivered(slot, k).
  Status decode_to(const RandomAccessFile& file, const VideoInfo& info, const VideoDecoderOptions& options,
                   std::span<const int64_t> frames, const std::function<TensorView(size_t k)>& slot,
                   const std::function<Status(const TensorView&, size_t k)>& delivered, VideoDecodeReport* report) {
    std::vector<int64_t> wanted;
    std::vector<size_t> first;
    distinct(frames, &wanted, &first);
    VideoDecodeReport local;
    VideoDecodeReport& rep = report ? *report : local;
    rep = {};
    if (wanted.empty()) return Status::ok();
    QuietLog quiet;
    HDL_ASSIGN_OR_RETURN(AVBufferRef* const hw, hardware(options));
    const AVPixelFormat dst_fmt = av_format_of(options.color);
    const int64_t c = color_channels(options.color);
    const int rotation = options.apply_rotation ? info.rotation : 0;
    const int w = int(info.width), h = int(info.height);
    // The retry below decodes only the frames not handed out yet: run() numbers them from 0,
    // `done` of them came before.
    size_t done = 0;
    bool sink_failed = false;
    auto convert = [&](size_t u, const AVFrame* f) -> Status {
      u += done;
      const TensorView out = slot(first[u]);
      if (f->format == AV_PIX_FMT_CUDA) {
        HDL_RETURN_IF_ERROR(convert_on_device(f, info, options, rotation, out));
        Status st = delivered(out, first[u]);
        sink_failed = !st.is_ok();
        return st;
      }
      if (!out.device.is_cpu()) return Status::internal("a frame decoded on the CPU for a device output");
      // libswscale writes whole blocks of pixels: straight into `out` only when its rows are
      // packed and a multiple of 16 pixels wide, so that nothing lands outside the view.
      const int64_t row = out.strides[0];
      if (rotation == 0 && out.strides[1] == c && w % 16 == 0 && row >= w * c && row <= INT32_MAX) {
        HDL_RETURN_IF_ERROR(converter.convert(f, w, h, dst_fmt, static_cast<uint8_t*>(out.data), int(row)));
      } else {
        const int64_t stride = (w * c + 63) / 64 * 64 + 64;
        uint8_t* buf = scratch.get(size_t(stride * h));
        if (!buf) return Status::resource_exhausted("out of memory");
        HDL_RETURN_IF_ERROR(converter.convert(f, w, h, dst_fmt, buf, int(stride)));
        write_rotated(buf, stride, w, h, c, rotation, out);
      }
      if (options.color == ColorFormat::kBGR) swap_red_blue(out);
      Status st = delivered(out, first[u]);
      sink_failed = !st.is_ok();
      return st;
    };
    size_t handed_out = 0;  // distinct frames delivered by the first run
    auto counting = [&](size_t u, const AVFrame* f) -> Status {
      HDL_RETURN_IF_ERROR(convert(u, f));
      handed_out = u + 1;
      return Status::ok();
    };
    ClipDecode clip(file, info, options, packet, frame, rep, hw);
    if (!clip.skip_possible() || wanted.size() == size_t(info.num_frames())) return clip.run(wanted, convert);
    // Unwanted non-reference frames skipped; should a wanted frame still go missing (a packet
    // whose timestamp belongs to another frame), the clip is decoded again in full.
    Status st = clip.run(wanted, counting, /*skip_unwanted=*/true);
    if (st.code() != StatusCode::kInvalidData || sink_failed) return st;
    ++rep.retries;
    // Each frame goes to the sink once: the retry wants the frames after those handed out.
    done = handed_out;
    const std::vector<int64_t> rest(wanted.begin() + std::ptrdiff_t(done), wanted.end());
    return clip.run(rest, convert);
  }
};

VideoDecoder::VideoDecoder(VideoDecoderOptions options) : options_(options), impl_(std::make_unique<Impl>()) {
  if (options_.threads < 0) throw std::invalid_argument("VideoDecoderOptions::threads must be >= 0");
  if (!options_.device.is_cpu() && (options_.device.index < 0 || options_.device.index >= 64))
    throw std::invalid_argument("VideoDecoderOptions::device: CUDA device index out of range");
  if (options_.max_frame_pixels <= 0) throw std::invalid_argument("VideoDecoderOptions::max_frame_pixels must be > 0");
  if (!impl_->packet || !impl_->frame) throw std::bad_alloc();
}

VideoDecoder::~VideoDecoder() = default;

Result<VideoInfo> VideoDecoder::probe(const RandomAccessFile& file) {
  QuietLog quiet;
  Input in;
  HDL_RETURN_IF_ERROR(in.open(file, nullptr, "not a video file"));
  AVFormatContext* fmt = in.fmt();
  HDL_RETURN_IF_ERROR(find_stream_info(in, options_.max_frame_pixels));
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
  if (info.width * info.height > options_.max_frame_pixels)
    return Status::resource_exhausted("frames of " + std::to_string(info.width) + "x" + std::to_string(info.height) +
                                      " are over max_frame_pixels (" + std::to_string(options_.max_frame_pixels) + ")");
  info.rotation = rotation_of(st);
  info.time_base_num = st->time_base.num;
  info.time_base_den = st->time_base.den;
  if (info.time_base_num <= 0 || info.time_base_den <= 0) info.time_base_num = info.time_base_den = 1;

  discard_all_but(fmt, index);
  FirstFrame first(st, options_.max_frame_pixels);
  std::vector<PacketTimes> packets;
  AVPacket* pkt = impl_->packet;
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
      first.send(pkt, impl_->frame);
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

Status VideoDecoder::decode(const RandomAccessFile& file, const VideoInfo& info, std::span<const int64_t> frames,
                            const FrameSink& sink, VideoDecodeReport* report) {
  HDL_RETURN_IF_ERROR(check_frames(info, frames));
  const int64_t c = color_channels(options_.color);
  const bool rotate = options_.apply_rotation && info.rotation != 0;
  const Shape shape{rotate ? info.display_height() : info.height, rotate ? info.display_width() : info.width, c};
  TensorView view;
  if (options_.device.is_cpu()) {
    uint8_t* pixels = impl_->single.get(size_t(shape.num_elements()));
    if (!pixels) return Status::resource_exhausted("out of memory");
    view = TensorView(pixels, shape, DType::kU8, Layout::kHWC);
  } else {
    HDL_RETURN_IF_ERROR(device_supports(info));
    HDL_ASSIGN_OR_RETURN(view, impl_->device_frame(options_, shape));
  }
  // Each distinct frame is converted into `view`, then handed to the sink once per occurrence.
  auto deliver = [&](const TensorView& out, size_t k) -> Status {
    for (size_t j = k; j < frames.size() && frames[j] == frames[k]; ++j) HDL_RETURN_IF_ERROR(sink(int64_t(j), out));
    return Status::ok();
  };
  return impl_->decode_to(file, info, options_, frames, [&](size_t) { return view; }, deliver, report);
}

Status VideoDecoder::decode_into(const RandomAccessFile& file, const VideoInfo& info, std::span<const int64_t> frames,
                                 const TensorView& out, VideoDecodeReport* report) {
  HDL_RETURN_IF_ERROR(check_frames(info, frames));
  const int64_t c = color_channels(options_.color);
  const bool rotate = options_.apply_rotation && info.rotation != 0;
  const Shape want{int64_t(frames.size()), rotate ? info.display_height() : info.height,
                   rotate ? info.display_width() : info.width, c};
  if (out.shape != want || out.dtype != DType::kU8 || out.device != options_.device || out.strides[3] != 1)
    return Status::invalid_argument("decode_into: the output must be a uint8 [T, H, W, C] view on " +
                                    options_.device.to_string() + " of shape " + want.to_string() +
                                    " with unit channel stride, not " + out.device.to_string() + " " + out.shape.to_string());
  if (!options_.device.is_cpu()) HDL_RETURN_IF_ERROR(device_supports(info));
  auto slot = [&](size_t k) { return out.select(0, int64_t(k), Layout::kHWC); };
  // Repeats of a frame are copies of its first slot.
  auto deliver = [&](const TensorView& first, size_t k) -> Status {
    for (size_t j = k + 1; j < frames.size() && frames[j] == frames[k]; ++j) {
      if (options_.device.is_cpu()) copy(first, slot(j));
      else HDL_RETURN_IF_ERROR(Impl::copy_on_device(first, slot(j), options_));
    }
    return Status::ok();
  };
  return impl_->decode_to(file, info, options_, frames, slot, deliver, report);
}

Status VideoDecoder::decode_only(const RandomAccessFile& file, const VideoInfo& info, std::span<const int64_t> frames,
                                 VideoDecodeReport* report) {
  HDL_RETURN_IF_ERROR(check_frames(info, frames));
  std::vector<int64_t> wanted;
  std::vector<size_t> first;
  distinct(frames, &wanted, &first);
  VideoDecodeReport local;
  VideoDecodeReport& rep = report ? *report : local;
  rep = {};
  if (wanted.empty()) return Status::ok();
  QuietLog quiet;
  if (!options_.device.is_cpu()) HDL_RETURN_IF_ERROR(device_supports(info));
  HDL_ASSIGN_OR_RETURN(AVBufferRef* const hw, impl_->hardware(options_));
  ClipDecode clip(file, info, options_, impl_->packet, impl_->frame, rep, hw);
  return clip.run(wanted, [](size_t, const AVFrame*) { return Status::ok(); });
}

Status video_hardware_status(int index) {
  const AVCodec* h264 = avcodec_find_decoder(AV_CODEC_ID_H264);
  if (!h264 || !has_cuda_hwaccel(h264)) return Status::unsupported("NVDEC: this FFmpeg build has no cuda hwaccel");
  return cuda_device_status(index);
}

Status VideoDecoder::device_supports(const VideoInfo& info) const {
  if (options_.device.is_cpu()) return Status::ok();
  // info.codec is the codec descriptor's name (probe() took it from avcodec_get_name).
  const AVCodecDescriptor* descriptor = avcodec_descriptor_get_by_name(info.codec.c_str());
  const AVCodec* codec = descriptor ? avcodec_find_decoder(descriptor->id) : nullptr;
  if (!codec || !has_cuda_hwaccel(codec))
    return Status::unsupported("NVDEC: this FFmpeg build has no cuda hwaccel for " + info.codec);
  // Measured on an H200 (docs/VIDEO.md, "NVDEC"; 2026-11-27): FFmpeg 5.1's cuda hwaccel gave frames of
  // the corpus's 4:2:2 MJPEG that differ from libavcodec's by up to 255 levels (45% of the values),
  // and its output crashed compute-sanitizer's racecheck. MJPEG stays on CPU threads (cheap there).
  if (codec->id == AV_CODEC_ID_MJPEG)
    return Status::unsupported("NVDEC: MJPEG is decoded on CPU threads (NVDEC's frames differed from libavcodec's)");
  return cuda_device_status(options_.device.index);
}

}  // namespace hdl
