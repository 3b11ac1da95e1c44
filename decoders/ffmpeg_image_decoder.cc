#include "decoders/ffmpeg_image_decoder.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "decoders/detail/decode_window.h"
#include "decoders/detail/image_header.h"
#include "decoders/detail/pillow_color.h"

namespace hdl {
namespace {

using detail::DecodeWindow;

// How to read R, G, B out of one packed pixel format: bytes per pixel and the byte offset of
// the most significant byte of each channel (16-bit samples keep their high byte, as Pillow's
// "RGB;16B" and "LA;16B" unpackers do). Alpha and padding bytes are never read.
enum class Kind { kRgb, kPalette, kMonoBlack, kMonoWhite };
struct Packed {
  AVPixelFormat fmt;
  Kind kind;
  int bytes, r, g, b;
};
constexpr Packed kPacked[] = {
    {AV_PIX_FMT_RGB24, Kind::kRgb, 3, 0, 1, 2},      {AV_PIX_FMT_BGR24, Kind::kRgb, 3, 2, 1, 0},
    {AV_PIX_FMT_RGBA, Kind::kRgb, 4, 0, 1, 2},       {AV_PIX_FMT_BGRA, Kind::kRgb, 4, 2, 1, 0},
    {AV_PIX_FMT_ARGB, Kind::kRgb, 4, 1, 2, 3},       {AV_PIX_FMT_ABGR, Kind::kRgb, 4, 3, 2, 1},
    {AV_PIX_FMT_RGB0, Kind::kRgb, 4, 0, 1, 2},       {AV_PIX_FMT_BGR0, Kind::kRgb, 4, 2, 1, 0},
    {AV_PIX_FMT_0RGB, Kind::kRgb, 4, 1, 2, 3},       {AV_PIX_FMT_0BGR, Kind::kRgb, 4, 3, 2, 1},
    {AV_PIX_FMT_RGB48BE, Kind::kRgb, 6, 0, 2, 4},    {AV_PIX_FMT_RGB48LE, Kind::kRgb, 6, 1, 3, 5},
    {AV_PIX_FMT_BGR48BE, Kind::kRgb, 6, 4, 2, 0},    {AV_PIX_FMT_BGR48LE, Kind::kRgb, 6, 5, 3, 1},
    {AV_PIX_FMT_RGBA64BE, Kind::kRgb, 8, 0, 2, 4},   {AV_PIX_FMT_RGBA64LE, Kind::kRgb, 8, 1, 3, 5},
    {AV_PIX_FMT_BGRA64BE, Kind::kRgb, 8, 4, 2, 0},   {AV_PIX_FMT_BGRA64LE, Kind::kRgb, 8, 5, 3, 1},
    {AV_PIX_FMT_GRAY8, Kind::kRgb, 1, 0, 0, 0},      {AV_PIX_FMT_GRAY16BE, Kind::kRgb, 2, 0, 0, 0},
    {AV_PIX_FMT_GRAY16LE, Kind::kRgb, 2, 1, 1, 1},   {AV_PIX_FMT_YA8, Kind::kRgb, 2, 0, 0, 0},
    {AV_PIX_FMT_YA16BE, Kind::kRgb, 4, 0, 0, 0},     {AV_PIX_FMT_YA16LE, Kind::kRgb, 4, 1, 1, 1},
    {AV_PIX_FMT_PAL8, Kind::kPalette, 1, 0, 0, 0},   {AV_PIX_FMT_MONOBLACK, Kind::kMonoBlack, 0, 0, 0, 0},
    {AV_PIX_FMT_MONOWHITE, Kind::kMonoWhite, 0, 0, 0, 0},
};
constexpr Packed kRgb24 = kPacked[0];

const Packed* find_packed(int fmt) {
  for (const Packed& p : kPacked)
    if (p.fmt == fmt) return &p;
  return nullptr;
}

// Converts pixels [x0, x0 + w) of one source row to `w` packed RGB triplets.
void row_to_rgb(const Packed& p, const uint8_t* src, const uint8_t* palette, int64_t x0, int64_t w,
                uint8_t* rgb) {
  switch (p.kind) {
    case Kind::kRgb:
      src += x0 * p.bytes;
      for (int64_t i = 0; i < w; ++i, src += p.bytes, rgb += 3) {
        rgb[0] = src[p.r];
        rgb[1] = src[p.g];
        rgb[2] = src[p.b];
      }
      break;
    case Kind::kPalette:  // palette entries are native-endian 0xAARRGGBB
      for (int64_t i = 0; i < w; ++i, rgb += 3) {
        uint32_t c;
        std::memcpy(&c, palette + 4 * src[x0 + i], 4);
        rgb[0] = uint8_t(c >> 16);
        rgb[1] = uint8_t(c >> 8);
        rgb[2] = uint8_t(c);
      }
      break;
    case Kind::kMonoBlack:
    case Kind::kMonoWhite:
      for (int64_t i = 0; i < w; ++i, rgb += 3) {
        int64_t x = x0 + i;
        bool bit = (src[x >> 3] >> (7 - (x & 7))) & 1;
        uint8_t v = (bit == (p.kind == Kind::kMonoBlack)) ? 255 : 0;
        rgb[0] = rgb[1] = rgb[2] = v;
      }
      break;
  }
}

// RGB triplets in place to the requested colour (BGR: swapped; gray: Pillow's luma).
void finish_color(uint8_t* px, int64_t w, ColorFormat color) {
  if (color == ColorFormat::kBGR) {
    for (int64_t i = 0; i < w; ++i) std::swap(px[3 * i], px[3 * i + 2]);
  } else if (color == ColorFormat::kGray) {
    detail::rgb_to_gray(px, 3, px, w);
  }
}

AVCodecID codec_for(const std::string& format) {
  if (format == "png") return AV_CODEC_ID_PNG;
  if (format == "bmp") return AV_CODEC_ID_BMP;
  if (format == "tiff") return AV_CODEC_ID_TIFF;
  if (format == "webp") return AV_CODEC_ID_WEBP;
  if (format == "jpeg") return AV_CODEC_ID_MJPEG;
  return AV_CODEC_ID_NONE;
}

// Copies a PNG to `dst` without the chunks FFmpeg would inflate for metadata we never use:
// its PNG decoder inflates iCCP and zTXt (and iTXt) payloads into a buffer without a size
// limit, so a 1 MB chunk of compressed zeros costs a 1 GB allocation (an inflate bomb that
// max_pixels cannot see). Dropping them changes no pixel (we do no colour management, as
// Pillow's convert("RGB") does none). tEXt goes too: metadata only. So do APNG's animation
// chunks (acTL, fcTL, fdAT): the still image is the IDAT one, as Pillow's first frame is, and
// no FFmpeg version can be led into decoding other frames. Chunks are copied whole,
// so the others keep their CRCs; a chunk that runs past the end is copied as it is (FFmpeg
// reports the damage). Returns the bytes written (at most data.size()).
size_t copy_png_without_metadata(std::span<const uint8_t> data, uint8_t* dst) {
  auto be32 = [&](size_t at) {
    return uint32_t(data[at]) << 24 | uint32_t(data[at + 1]) << 16 | uint32_t(data[at + 2]) << 8 | data[at + 3];
  };
  constexpr size_t kSignature = 8;
  std::memcpy(dst, data.data(), std::min(kSignature, data.size()));
  size_t in = kSignature, out = kSignature;
  while (in + 12 <= data.size()) {
    const size_t len = be32(in);
    const size_t total = 12 + len;  // length, type, payload, CRC
    if (len > data.size() - in - 12) break;
    const uint8_t* type = data.data() + in + 4;
    bool drop = false;
    for (const char* t : {"iCCP", "zTXt", "iTXt", "tEXt", "acTL", "fcTL", "fdAT"}) drop |= std::memcmp(type, t, 4) == 0;
    if (!drop) {
      std::memmove(dst + out, data.data() + in, total);
      out += total;
    }
    in += total;
  }
  if (in < data.size()) {
    std::memcpy(dst + out, data.data() + in, data.size() - in);
    out += data.size() - in;
  }
  return out;
}

std::string av_error_text(int err) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(err, buf, sizeof(buf));
  return buf;
}

class FfmpegImageDecoder final : public ImageDecoder {
 public:
  FfmpegImageDecoder() : packet_(av_packet_alloc()), frame_(av_frame_alloc()) {}
  ~FfmpegImageDecoder() override {
    for (auto& c : contexts_) avcodec_free_context(&c.ctx);
    sws_freeContext(sws_);
    av_buffer_unref(&input_);
    av_frame_free(&frame_);
    av_packet_free(&packet_);
  }

  const char* name() const override { return "ffmpeg"; }

  Result<ImageInfo> read_info(std::span<const uint8_t> data) override {
    ImageInfo info;
    HDL_RETURN_IF_ERROR(detail::parse_image_header(data, &info));
    return info;
  }

  Result<Shape> output_shape(const ImageInfo& info, const DecodeRequest& request) override {
    HDL_ASSIGN_OR_RETURN(DecodeWindow window, detail::decode_window(info, request, 1));
    return window.shape;
  }

  Result<DecodeReport> decode(std::span<const uint8_t> data, const DecodeRequest& request,
                              const TensorView& out) override {
    ImageInfo info;
    HDL_RETURN_IF_ERROR(detail::parse_image_header(data, &info));
    HDL_ASSIGN_OR_RETURN(DecodeWindow window, detail::decode_window(info, request, 1));
    HDL_RETURN_IF_ERROR(detail::check_output(out, window));
    // FFmpeg's mjpeg has no scan limit; libjpeg-turbo's (JpegDecoder) is checked as it reads.
    if (info.format == "jpeg" && request.max_scans > 0 &&
        detail::count_jpeg_scans(data, request.max_scans) > request.max_scans)
      return Status::resource_exhausted("too many scans: more than max_scans (" +
                                        std::to_string(request.max_scans) + ")");
    HDL_ASSIGN_OR_RETURN(AVCodecContext * ctx, context_for(info.format));
    // FFmpeg refuses frames over max_pixels before allocating them. Not just the request's
    // limit: the size our header parser saw (plus FFmpeg's stride alignment), so a file whose
    // bitstream declares more than its header (a WebP canvas of 1x1 around a 16384x16384
    // VP8L image) is refused before allocation too, not after, by check_frame.
    ctx->max_pixels = std::min<int64_t>(request.max_pixels, (info.width + 128) * (info.height + 16));
    Status s = decode_frame(ctx, data);
    if (s.is_ok()) s = check_frame(info);
    if (s.is_ok()) s = write_window(window, request.color, out);
    av_frame_unref(frame_);
    av_packet_unref(packet_);
    avcodec_flush_buffers(ctx);  // ready for the next image
    if (!s.is_ok()) return s;
    return DecodeReport{};
  }

 private:
  struct CodecSlot {
    AVCodecID id;
    AVCodecContext* ctx;
  };

  // One open context per codec, kept between images.
  Result<AVCodecContext*> context_for(const std::string& format) {
    AVCodecID id = codec_for(format);
    for (const CodecSlot& c : contexts_)
      if (c.id == id) return c.ctx;
    const AVCodec* codec = id == AV_CODEC_ID_NONE ? nullptr : avcodec_find_decoder(id);
    if (!codec) return Status::unsupported("this FFmpeg build has no " + format + " decoder");
    AVCodecContext* ctx = avcodec_alloc_context3(codec);
    if (!ctx) return Status::resource_exhausted("out of memory allocating a codec context");
    ctx->thread_count = 1;          // one decoder per pipeline thread: no private threads
    ctx->log_level_offset = 100;  // levels 8..56 -> 108..156: below any log level, never printed
    if (int err = avcodec_open2(ctx, codec, nullptr); err < 0) {
      avcodec_free_context(&ctx);
      return Status::unsupported("cannot open the FFmpeg " + format + " decoder: " + av_error_text(err));
    }
    contexts_.push_back({id, ctx});
    return ctx;
  }

  // Sends the whole file as one packet (what FFmpeg's image2 demuxer does) and receives a frame.
  Status decode_frame(AVCodecContext* ctx, std::span<const uint8_t> data) {
    size_t padded = data.size() + AV_INPUT_BUFFER_PADDING_SIZE;
    if (!input_ || size_t(input_->size) < padded) {
      if (av_buffer_realloc(&input_, padded) < 0) return Status::resource_exhausted("out of memory");
    }
    size_t size = data.size();
    if (ctx->codec_id == AV_CODEC_ID_PNG) {
      size = copy_png_without_metadata(data, input_->data);
    } else {
      std::memcpy(input_->data, data.data(), data.size());
    }
    std::memset(input_->data + size, 0, AV_INPUT_BUFFER_PADDING_SIZE);
    packet_->buf = av_buffer_ref(input_);
    if (!packet_->buf) return Status::resource_exhausted("out of memory");
    packet_->data = input_->data;
    packet_->size = int(size);
    packet_->flags = AV_PKT_FLAG_KEY;  // else the PNG decoder adds the previous image (APNG P-frame)
    int err = avcodec_send_packet(ctx, packet_);
    if (err >= 0) {
      err = avcodec_receive_frame(ctx, frame_);
      if (err == AVERROR(EAGAIN) && avcodec_send_packet(ctx, nullptr) >= 0)
        err = avcodec_receive_frame(ctx, frame_);
    }
    if (err == AVERROR(EAGAIN) || err == AVERROR_EOF)
      return Status::invalid_data(std::string(ctx->codec->name) + " decoder produced no image");
    if (err == AVERROR_PATCHWELCOME || err == AVERROR(ENOSYS))
      return Status::unsupported(std::string(ctx->codec->name) + " decoder: " + av_error_text(err));
    if (err == AVERROR(ENOMEM)) return Status::resource_exhausted(av_error_text(err));
    if (err < 0) return Status::invalid_data(std::string(ctx->codec->name) + " decoder: " + av_error_text(err));
    return Status::ok();
  }

  Status check_frame(const ImageInfo& info) const {
    if (frame_->width != info.width || frame_->height != info.height)
      return Status::invalid_data("header says " + std::to_string(info.width) + "x" +
                                  std::to_string(info.height) + " but the decoder produced " +
                                  std::to_string(frame_->width) + "x" + std::to_string(frame_->height));
    return Status::ok();
  }

  // Converts the window's rows (hand loops for packed formats, libswscale for the rest) and
  // writes them, oriented, into `out`.
  Status write_window(const DecodeWindow& window, ColorFormat color, const TensorView& out) {
    const Packed* packed = find_packed(frame_->format);
    const uint8_t* plane = frame_->data[0];
    int64_t stride = frame_->linesize[0];
    if (!packed) {
      HDL_RETURN_IF_ERROR(convert_with_swscale());
      packed = &kRgb24;
      plane = full_rgb_.data();
      stride = int64_t(frame_->width) * 3;
    }
    const int64_t w = window.scaled.w;
    if (row_.size() < size_t(w) * 3) row_.resize(size_t(w) * 3);  // grows only
    for (int64_t r = 0; r < window.scaled.h; ++r) {
      const uint8_t* src = plane + (window.scaled.y + r) * stride;
      row_to_rgb(*packed, src, frame_->data[1], window.scaled.x, w, row_.data());
      finish_color(row_.data(), w, color);
      detail::write_window_row(row_.data(), r, window, out);
    }
    return Status::ok();
  }

  Status convert_with_swscale() {
    const int w = frame_->width, h = frame_->height;
    sws_ = sws_getCachedContext(sws_, w, h, AVPixelFormat(frame_->format), w, h, AV_PIX_FMT_RGB24,
                                SWS_BILINEAR | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, nullptr,
                                nullptr, nullptr);
    if (!sws_) {
      const char* fmt = av_get_pix_fmt_name(AVPixelFormat(frame_->format));
      return Status::unsupported(std::string("no conversion from pixel format ") + (fmt ? fmt : "?"));
    }
    size_t bytes = size_t(w) * h * 3;
    if (full_rgb_.size() < bytes) full_rgb_.resize(bytes);  // grows only
    uint8_t* dst[4] = {full_rgb_.data(), nullptr, nullptr, nullptr};
    int dst_stride[4] = {w * 3, 0, 0, 0};
    sws_scale(sws_, frame_->data, frame_->linesize, 0, h, dst, dst_stride);
    return Status::ok();
  }

  AVPacket* packet_;
  AVFrame* frame_;
  AVBufferRef* input_ = nullptr;  // the file plus FFmpeg's zero padding
  SwsContext* sws_ = nullptr;
  std::vector<CodecSlot> contexts_;
  std::vector<uint8_t> row_;       // one converted window row
  std::vector<uint8_t> full_rgb_;  // a whole swscale'd image
};

}  // namespace

std::unique_ptr<ImageDecoder> make_ffmpeg_image_decoder() {
  return std::make_unique<FfmpegImageDecoder>();
}

bool probe_png(std::span<const uint8_t> data) { return detail::is_png(data); }
bool probe_bmp(std::span<const uint8_t> data) { return detail::is_bmp(data); }
bool probe_tiff(std::span<const uint8_t> data) { return detail::is_tiff(data); }
bool probe_webp(std::span<const uint8_t> data) { return detail::is_webp(data); }

}  // namespace hdl
